"""Table 1's confirmation: a few contrasts written into a protocol before fresh seeds decide them.

The 149-run grid of :mod:`arithmech.table1.run` is the *exploration*. What it suggested is confirmed here, in
three parts that read one sitting each:

* :mod:`arithmech.table1.protocol` — the protocol: which arms, at which rates (chosen by a stated rule on the
  exploration's validation items), which contrasts, margins, interval, correction and how many fresh seeds (a
  power calculation on the exploration's spreads); written once, committed before any confirmatory run;
* :mod:`arithmech.table1.confirm` — the runner (``python -m arithmech confirm``): every planned run, resumable, one
  record each in ``<model>/confirmation/``, each saying its phase and the protocol it follows;
* :mod:`arithmech.table1.contrasts` — the paired interval and the deciders, and :class:`Confirmation`, the
  records read once and every contrast decided from them.
"""
