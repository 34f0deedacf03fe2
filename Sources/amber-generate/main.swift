import AmberCodegen

// The generator alone, for the AmberGenerate build-tool plugin: it builds
// without the stores, so a package using the plugin compiles little twice.
GenerateCommand.main()
