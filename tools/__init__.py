"""Developer tools run from the checkout (never shipped): the generated Reference (``tools.reference``)."""
