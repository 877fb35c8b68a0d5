"""The browser's widgets: the module tree, the IR view, the detail pane."""
