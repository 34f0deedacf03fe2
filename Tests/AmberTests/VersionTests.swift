import Testing
@testable import Amber
@Test func versionIsSemver() { #expect(Amber.version.split(separator: ".").count == 3) }
