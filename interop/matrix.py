"""Renders interop results (client TAB feature TAB status TAB note lines) as
a markdown matrix: one row per feature, one column per client, then
"N skipped" and, last, "N passed, N failed". Exits 1 when anything failed."""

import sys


def main(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
    rows = [(r + [""] * 4)[:4] for r in rows]
    clients, features, cells = [], [], {}
    for client, feature, status, note in rows:
        if client not in clients:
            clients.append(client)
        if feature not in features:
            features.append(feature)
        if status == "pass":
            text = "pass"
        elif status == "skip":
            text = f"skip ({note})" if note else "skip"
        else:
            text = f"**FAIL** ({note})" if note else "**FAIL**"
        cells[(feature, client)] = text.replace("|", "\\|")

    print("| feature | " + " | ".join(clients) + " |")
    print("|---|" + "---|" * len(clients))
    for f in features:
        print(f"| {f.replace('|', chr(92) + '|')} | "
              + " | ".join(cells.get((f, c), "—") for c in clients) + " |")
    passed = sum(1 for r in rows if r[2] == "pass")
    skipped = sum(1 for r in rows if r[2] == "skip")
    failed = len(rows) - passed - skipped
    print()
    print(f"{skipped} skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
