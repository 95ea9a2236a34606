"""verify a hand-edited migration: mvrun.py SCRIPT MODE MIGRATED_FILE [steps] [json-out]. Report to stdout
(format_report); with json-out, also report_dict as JSON (per-run loss_dtype, trace...)."""
import json
import sys
from pathlib import Path

from bf16_migrate.verify import format_report, report_dict, verify_script

script, mode, mig = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 12
report = verify_script(script, mode, steps=steps, migrated_source=mig.read_text(), timeout=600, trace_time=60)
print(format_report(report))
if len(sys.argv) > 5:
    Path(sys.argv[5]).write_text(json.dumps(report_dict(report), indent=1, default=str))
