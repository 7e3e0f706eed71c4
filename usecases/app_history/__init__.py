"""Daily cost history per Argo CD application: its scope (``scope``) and the recorder."""
