"""``finops doctor``: the checks an operator runs first (``checks``), and what each function needs
of Kubernetes (``rbac``)."""

from usecases.doctor.checks import FAIL, OK, WARN, Check, Opened, Parts, Report, run

__all__ = ["FAIL", "OK", "WARN", "Check", "Opened", "Parts", "Report", "run"]
