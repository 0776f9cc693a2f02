@_exported import StowageCache
@_exported import StowageCookies
@_exported import StowageCore
@_exported import StowageHousekeeping
@_exported import StowagePreferences
