"""The bench's rows and its markdown table (pure: a test imports it without JAX)."""

from __future__ import annotations

import dataclasses
import re

from bench.against import goal_text, ratio_text, seconds_text

# Time per op from 10k to 1M ops: the largest at most this much over the smallest.
FLAT_GOAL = 1.2


@dataclasses.dataclass
class Row:
    section: str
    name: str
    ops: int | None
    baseline_seconds: float
    seconds: float
    goal: float | None
    baseline_rss_kb: int | None = None
    rss_kb: int | None = None
    rss_goal: float | None = None
    note: str = ""
    startup_seconds: float = 0.0
    """hloscope's time on a tiny module of the same format: the fixed cost."""
    goal_over: float | None = None
    """A goal in seconds over the baseline, instead of a ratio (start-up)."""
    against_seconds: float | None = None
    """The same command's median time from the `--against` tree."""
    cpu_seconds: float | None = None
    against_cpu_seconds: float | None = None
    """Median CPU times (user and system) of this tree's runs and the other's."""

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline_seconds

    @property
    def against_ratio(self) -> float | None:
        """This tree's time over the `--against` tree's."""
        return self.seconds / self.against_seconds if self.against_seconds else None

    @property
    def against_cpu_ratio(self) -> float | None:
        if not self.cpu_seconds or not self.against_cpu_seconds:
            return None
        return self.cpu_seconds / self.against_cpu_seconds

    @property
    def rss_ratio(self) -> float | None:
        if not self.rss_kb or not self.baseline_rss_kb:
            return None
        return self.rss_kb / self.baseline_rss_kb

    @property
    def us_per_op(self) -> float | None:
        """Time per op once the fixed start-up cost is taken away."""
        if not self.ops:
            return None
        return max(self.seconds - self.startup_seconds, 0.0) / self.ops * 1e6

    def verdict(self) -> str:
        missed = []
        if self.goal is not None and self.ratio > self.goal:
            missed.append("time")
        if self.goal_over is not None and self.seconds - self.baseline_seconds > self.goal_over:
            missed.append("time")
        rss = self.rss_ratio
        if self.rss_goal is not None and rss is not None and rss > self.rss_goal:
            missed.append("memory")
        if self.goal is None and self.rss_goal is None and self.goal_over is None:
            return "-"
        return "ok" if not missed else "MISSED " + ", ".join(missed)


def flatness(sizes: dict[str, float]) -> str:
    """` (spread 1.31x, MISSED)`: the largest time per op over the smallest."""
    values = [v for v in sizes.values() if v > 0]
    if len(values) < 2:
        return ""
    spread = max(values) / min(values)
    return f" (spread {spread:.2f}x, {'ok' if spread <= FLAT_GOAL else 'MISSED'})"


def markdown(rows: list[Row], info: dict[str, str], against: str | None = None) -> str:
    """The table: with `against` (a revision), its time, this tree's ratio to it (and
    of CPU times) beside the floor's."""
    lines = [
        f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, "
        f"jax {info['jax']}; {info['date']}"
        + (f"; load average {info['load']} at the start." if info.get("load") else "."),
        *([f"The other tree runs with its own {info['overlay']}."] if info.get("overlay") else []),
        *(
            [f"Every measurement ran {info['repeats']} times as often (--repeats)."]
            if info.get("repeats", "1") != "1"
            else []
        ),
        "",
    ]
    if against:
        lines += [
            f"| section | case | ops | floor | this tree | {against} | this / {against} | "
            f"CPU this / {against} | this / floor | goal | µs/op | RSS / floor | verdict |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| --- |",
        ]
    else:
        lines += [
            "| section | case | ops | baseline | hloscope | ratio | goal | µs/op | RSS ratio "
            "| verdict |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
    for row in rows:
        if row.note and row.goal is None and row.baseline_seconds == row.seconds == 1:
            blanks = "| " * (10 if against else 7)
            lines.append(f"| {row.section} | {row.name} {blanks}| {row.note} |")
            continue
        rss = row.rss_ratio
        cells = [row.section, row.name, str(row.ops or ""), seconds_text(row.baseline_seconds)]
        cells.append(seconds_text(row.seconds))
        if against:
            cells += [
                seconds_text(row.against_seconds),
                ratio_text(row.against_ratio),
                ratio_text(row.against_cpu_ratio),
            ]
        cells += [
            ratio_text(row.ratio),
            goal_text(row.goal, row.goal_over),
            "" if row.us_per_op is None else f"{row.us_per_op:.1f}",
            ratio_text(rss),
            row.verdict() + (f" ({row.note})" if row.note else ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    flat = [r for r in rows if r.section == "load" and r.name.startswith("generated") and r.ops]
    by_format: dict[str, dict[str, float]] = {}
    for row in flat:
        size, fmt = re.match(r"generated (\S+) \((\w+)\)", row.name).groups()  # type: ignore[union-attr]
        by_format.setdefault(fmt, {})[size] = row.us_per_op or 0
    if by_format:
        lines.append("")
        lines.append(
            f"Time per op (hloscope), 10k -> largest (goal: flat within {FLAT_GOAL - 1:.0%}): "
            + "; ".join(
                f"{fmt}: " + " -> ".join(f"{v:.1f} µs" for v in sizes.values()) + flatness(sizes)
                for fmt, sizes in by_format.items()
            )
        )
    return "\n".join(lines) + "\n"
