"""Parses Prometheus' text exposition format with the official Python client's parser.

    python parse_metrics.py < metrics.txt

Prints one JSON object: each metric family by name, with its type, help and samples
(name, labels, value). The parser raises on anything that is not the format.
"""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families

families = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    families[family.name] = {
        "type": family.type,
        "help": family.documentation,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples],
    }
print(json.dumps(families))
