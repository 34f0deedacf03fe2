/// The version of the Amber library, "MAJOR.MINOR.PATCH".
public let version = "0.1.0"
