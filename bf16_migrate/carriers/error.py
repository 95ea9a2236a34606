"""The error every carrier raises for a file it cannot parse, alone in its module so that a run
over files that name no legacy variable can name it (:mod:`bf16_migrate.scan`,
:mod:`bf16_migrate.suppress`) without loading what an analysis holds (:mod:`.model`, its
dataclasses and :mod:`bf16_migrate.command_lines`: bench/RESULTS.md, the clean path)."""


class CarrierError(Exception):
    """A carrier file cannot be parsed; the message is ``path:line:col: ...`` on one line."""
