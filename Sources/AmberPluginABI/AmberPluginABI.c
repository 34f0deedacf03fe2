/* Carries include/amber_plugin.h to Swift targets (the core loader and the Swift sample plugin); intentionally empty. */
