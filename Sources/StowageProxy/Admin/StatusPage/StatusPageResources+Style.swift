extension StatusPageResources {
    /// `GET /status.css`: system fonts only, light and dark.
    static let style = #"""
        :root { color-scheme: light dark; --fg: #1d2330; --muted: #5b6475; --bg: #f5f6f8; --card: #ffffff;
          --line: #d9dde5; --ok: #17803d; --bad: #b42318; }
        @media (prefers-color-scheme: dark) {
          :root { --fg: #e6e8ee; --muted: #9aa3b5; --bg: #15181e; --card: #1e232b; --line: #323946;
            --ok: #4cc27a; --bad: #ff7b6b; }
        }
        * { box-sizing: border-box; }
        body { margin: 0; padding: 1.5rem; background: var(--bg); color: var(--fg);
          font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
        header h1 { margin: 0; font-size: 1.5rem; }
        header p { margin: .25rem 0 1rem; color: var(--muted); }
        code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
        main { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 1rem; }
        section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; }
        section.wide { grid-column: 1 / -1; }
        h2 { margin: 0 0 .5rem; font-size: .85rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
        .figure { margin: 0 0 .5rem; font-size: 2rem; font-weight: 600; font-variant-numeric: tabular-nums; }
        dl { display: grid; grid-template-columns: auto 1fr; gap: .2rem .75rem; margin: .25rem 0; }
        dt { color: var(--muted); }
        dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
        meter { width: 100%; height: .8rem; }
        table { width: 100%; border-collapse: collapse; table-layout: fixed; }
        th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th:nth-child(1), td:nth-child(1) { width: 7rem; }
        th:nth-child(2), td:nth-child(2) { width: 5rem; }
        th:nth-child(4), td:nth-child(4) { width: 6rem; text-align: right; }
        td:nth-child(3) { font-family: ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
        .figure.quiet { font-size: 1.25rem; font-weight: 500; color: var(--muted); }
        .ok { color: var(--ok); }
        .bad { color: var(--bad); }
        .waiting { color: var(--muted); }
        footer { margin-top: 1rem; color: var(--muted); font-size: .85rem; }
        footer a { color: inherit; }

        """#
}
