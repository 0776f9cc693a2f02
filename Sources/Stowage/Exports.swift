@_exported import StowageCore
