"""Reports as text for a terminal or a pipe, with rich: one module per report
(`inspect`, `params`, `placement`, `fusions`, `diff`, `aot`), and what they share
(`common`). The browser's views use the same helpers for the rows and summaries
they show.

Each `render_*` takes a report and a `rich.console.Console`; nothing here computes
anything a report does not already hold.
"""
