// The tests start child processes and servers as the bench does: one launcher for both.
@_exported import StowageProcessSupport
// Clocks, temporary directories and the in-memory shared level are the public StowageTesting.
@_exported import StowageTesting
