/// The status page's files, kept in the binary so the page needs nothing else: no CDN, no
/// build step, no fonts. The HTML loads the style and the script from the listener itself, so
/// the page runs under a policy that allows nothing inline
/// (``AdminHandler/contentSecurityPolicy``).
enum StatusPageResources {}
