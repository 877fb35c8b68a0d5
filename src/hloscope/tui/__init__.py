"""The interactive browser (textual): `hloscope tui`, and `hloscope inspect` on a
terminal. Only this package imports textual; the command line imports it inside
the commands that open the browser, so `--json` and `--print` never load it."""
