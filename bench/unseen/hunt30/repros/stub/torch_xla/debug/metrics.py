def metrics_report():
    return "[stub] metrics report"


def short_metrics_report(*a, **k):
    return "[stub] short metrics report"
