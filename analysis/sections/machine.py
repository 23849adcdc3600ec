"""The report's *The machine*: core/machine.py's facts about the machine and its state, a line
each."""

from __future__ import annotations

from analysis.core.machine import machine_facts
from analysis.sections.base import Section


def machine_md(env: dict) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in machine_facts(env).items())


class Machine(Section):
    title = "The machine"

    def markdown(self) -> str:
        return machine_md(self.ctx.results.env)
