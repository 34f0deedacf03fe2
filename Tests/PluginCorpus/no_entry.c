/* expect: exports no amber_plugin_entry function */
int amber_plugin_entry_misspelled(void) { return 0; }
