"""Answers an application team acts on, served by ``cost_api``: rightsizing from
VerticalPodAutoscalers and orphaned pods (pods no Argo CD application owns)."""
