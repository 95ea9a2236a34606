"""kpi: a small forecaster of daily KPIs."""
