"""Reports as text for a terminal or a pipe, with rich: one module per report
(`inspect`, `params`, `placement`, `fusions`, `diff`, `aot`, `compiles`, `passes`,
`memory`), and what they share (`common`). The browser's views use the same helpers
for the rows and summaries they show.

Each `render_*` takes a report and a `rich.console.Console`; nothing here computes
anything a report does not already hold. Each report's entry in
`hloscope.reports.registry` names its renderer, which is imported (with rich) when
it prints: a command printing JSON never loads rich or another command's renderer.
"""
