"""A stop hook made of a host's adapter alone, for the contract tests of the real CLIs.

`python -E -S adapter_hook.py HOST LOG PLAN`: reads the payload the CLI sends, appends it
to LOG with what the adapter read from it (the StopEvent) and which host the registry says
sent it, then writes the PLAN's next step: a neutral answer rendered in the host's shape
through hook_io (as every hook of ours writes), after an optional sleep, or an exit code
with a reason on stderr. PLAN is a JSON list; past its end its last step repeats.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pytest_acceptance.gate import hook_io, host_registry


def main(host: str, log: Path, plan_file: Path) -> int:
    raw = hook_io.read_payload(sys.stdin.buffer.read())
    adapter = host_registry.adapter(host)
    sender = host_registry.whose(raw)
    record = {
        "raw": raw,
        "event": adapter.read(raw).__dict__,
        "sender": sender.contract.name if sender is not None else None,
    }
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    plan = json.loads(plan_file.read_text(encoding="utf-8"))
    index = len(log.read_text(encoding="utf-8").splitlines()) - 1
    step = plan[min(index, len(plan) - 1)]
    time.sleep(step.get("sleep", 0))
    if "exit" in step:
        sys.stderr.write(f"{step.get('stderr', '')}\n")
        return int(step["exit"])
    hook_io.answer_with(adapter.render)
    if step.get("answer"):
        hook_io.emit(step["answer"])
    hook_io.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
