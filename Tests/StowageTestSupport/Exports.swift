// The tests start child processes and servers as the bench does: one launcher for both.
@_exported import StowageProcessSupport
