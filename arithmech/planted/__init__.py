"""The method scored against the planted model's circuit: the rules (:mod:`~arithmech.planted.rules`), the step
(``python -m arithmech planted-score``: :mod:`~arithmech.planted.run`, :mod:`~arithmech.planted.scoring`,
:mod:`~arithmech.planted.knockout`, its config :mod:`~arithmech.planted.config`) and the chapter's page
(:mod:`~arithmech.planted.page`). The model and its ground truth live in :mod:`arithmech.embedded.planted` and
:mod:`arithmech.embedded.planted_truth`."""
