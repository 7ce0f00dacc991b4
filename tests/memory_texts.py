"""Texts for the memory write rule's thresholds (0.85: skipped as a duplicate, 0.7: updates the
closest memory), with their measured similarity to BASE under the int8 model and the float one:

  int8   float
  0.915  0.898  DUPLICATE     "The owner's favourite scripting language is Python."   skipped
  0.774  0.766  RELATED       "The owner enjoys writing Python code."                 updated
  0.758  0.798  ALSO_RELATED  "The owner's favourite programming language is C++."   updated
  0.619  0.615  DISTANT       "The owner's favourite framework is Django."            inserted

Each sits at least 0.045 from every threshold under both models (the two models themselves
differ by up to 0.046 on such sentences). The int8 model computes its integer products exactly
on every x86-64 CPU, so its own spread between CPUs is float rounding, orders of magnitude
smaller; the texts once chosen 0.005 from a threshold were judged differently on an AVX2-only
CPU, whose saturating int8 kernel the model then hit (docs/EMBEDDING_MODEL.md).
"""

BASE = "The owner's favourite programming language is Python."
DUPLICATE = "The owner's favourite scripting language is Python."
RELATED = "The owner enjoys writing Python code."
ALSO_RELATED = "The owner's favourite programming language is C++."
DISTANT = "The owner's favourite framework is Django."
UNRELATED = "The owner's favourite food is pizza."
