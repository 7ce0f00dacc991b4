"""Retrieval quality benchmark: the hand-judged set in bench/quality/, scored as nDCG@10,
recall@10 and MRR for text-only, vector-only and hybrid retrieval.

The corpus is uploaded through the HTTP API into one agent of a fresh `palaver serve` on a
temporary data directory; hybrid rankings come from `POST /api/rag/query`, text-only and
vector-only ones from the server's index class on the same database once the server has
stopped (bench/quality/run.py says why). Questions without an answer in the corpus are left
out of the means and reported on their own: how many of them get a best vector match as
close as a typical correct first answer (a confident wrong answer).

    python -m bench.bench_quality [--embedder float|quantized] [--fast]

Writes bench/results/quality.json and bench/results/quality.md; each run replaces the results
of its embedder variant and keeps the other's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support import new_agent

from bench.quality.corpus import (
    Question,
    load_documents,
    load_questions,
)
from bench.quality.run import (
    MODES,
    Rankings,
    ask_hybrid,
    check_variant,
    choose_variant,
    database_url,
    rank_in_process,
    start_server,
    upload_corpus,
)
from bench.quality.scoring import Scores, by_kind, ideal_gains, mean_scores, score, unheld

RESULTS = Path(__file__).parent / "results"


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def collect(variant: str, fast: bool) -> tuple[list[Question], Rankings, float, int]:
    check_variant(variant)
    files = load_documents(fast)
    questions = load_questions(fast)
    rankings = Rankings()
    with tempfile.TemporaryDirectory(prefix="palaver-quality-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            with server.login() as api:
                choose_variant(api, variant)
                agent_id = new_agent(api)["id"]
                ingest_seconds = upload_corpus(api, agent_id, files)
                ask_hybrid(api, agent_id, questions, rankings)
        finally:
            server.stop()
        asyncio.run(rank_in_process(database_url(server), agent_id, questions, variant, rankings))
    return questions, rankings, ingest_seconds, len(files)


def evaluate(questions: list[Question], rankings: Rankings) -> dict[str, Any]:
    broken = unheld([j for q in questions for j in q.judgements], rankings.corpus)
    if broken:
        raise SystemExit(f"{len(broken)} judged spans are in no chunk, first: {broken[0]}")
    answerable = [q for q in questions if q.judgements]
    ideals = {q.id: ideal_gains(q, rankings.corpus) for q in answerable}
    modes: dict[str, Any] = {}
    per_question: dict[str, dict[str, float]] = {q.id: {} for q in answerable}
    for mode in MODES:
        rows: list[Scores] = [
            score(q, rankings.ranked[mode][q.id], ideals[q.id]) for q in answerable
        ]
        modes[mode] = {"overall": mean_scores(rows), "by_kind": by_kind(answerable, rows)}
        for question, row in zip(answerable, rows, strict=True):
            per_question[question.id][mode] = round(row.ndcg, 4)
    return {
        "modes": modes,
        "ndcg_per_question": per_question,
        "no_answer": no_answer(questions, rankings),
        "hybrid_at_least_each_alone": all(
            modes["hybrid"]["overall"]["ndcg@10"] >= modes[m]["overall"]["ndcg@10"]
            for m in ("text", "vector")
        ),
    }


def no_answer(questions: list[Question], rankings: Rankings) -> dict[str, Any]:
    """A question the corpus cannot answer scores by not looking answered: its best vector
    match should be less similar than the median best match of answerable questions whose
    first vector hit answers them. Text and fused scores have no absolute scale to judge by."""
    unanswerable = [q for q in questions if not q.judgements]
    ideals = {q.id: ideal_gains(q, rankings.corpus) for q in questions if q.judgements}
    correct = [
        rankings.top_cosine[q.id]
        for q in questions
        if q.judgements and score(q, rankings.ranked["vector"][q.id], ideals[q.id]).mrr == 1.0
    ]
    if not unanswerable or not correct:
        return {"questions": len(unanswerable)}
    threshold = statistics.median(correct)
    cosines = [rankings.top_cosine[q.id] for q in unanswerable]
    return {
        "questions": len(unanswerable),
        "threshold_cosine": round(threshold, 4),
        "median_top_cosine": round(statistics.median(cosines), 4),
        "confidently_wrong": sum(c >= threshold for c in cosines),
    }


def report(variant: str, fast: bool) -> dict[str, Any]:
    questions, rankings, ingest_seconds, documents = collect(variant, fast)
    result = evaluate(questions, rankings)
    hybrid_ms = sorted(rankings.hybrid_ms)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "embedders": rankings.embedders,
        "slice": "fast" if fast else "full",
        "documents": documents,
        "chunks": len(rankings.corpus),
        "questions": len(questions),
        "ingest_seconds": round(ingest_seconds, 1),
        "hybrid_query_median_ms": round(statistics.median(hybrid_ms), 1),
        "fusion_agrees_with_http": round(rankings.agreement, 4),
        **result,
    }


def markdown(results: dict[str, Any]) -> str:
    lines = ["# Retrieval quality", ""]
    for variant, r in results.items():
        lines += [
            f"## Embedder: {variant} ({', '.join(r['embedders'])})",
            "",
            f"Run {r['date']} on {r['machine']}: {r['documents']} documents, {r['chunks']} "
            f"chunks, {r['questions']} questions ({r['slice']} set); ingest through the HTTP "
            f"API {r['ingest_seconds']} s; hybrid query median {r['hybrid_query_median_ms']} "
            f"ms over HTTP (timings depend on the machine's load; the scores do not). "
            f"In-process fusion of the text and vector lists matched the HTTP "
            f"ranking for {r['fusion_agrees_with_http']:.0%} of the questions.",
            "",
            "| Mode | nDCG@10 | recall@10 | MRR |",
            "|---|---|---|---|",
        ]
        for mode in MODES:
            o = r["modes"][mode]["overall"]
            lines.append(f"| {mode} | {o['ndcg@10']:.3f} | {o['recall@10']:.3f} | {o['mrr']:.3f} |")
        kinds = list(r["modes"]["hybrid"]["by_kind"])
        lines += ["", "nDCG@10 by kind of question:", ""]
        lines.append("| Kind | questions | " + " | ".join(MODES) + " |")
        lines.append("|---|---|" + "---|" * len(MODES))
        for kind in kinds:
            count = r["modes"]["hybrid"]["by_kind"][kind]["questions"]
            cells = " | ".join(f"{r['modes'][m]['by_kind'][kind]['ndcg@10']:.3f}" for m in MODES)
            lines.append(f"| {kind} | {count} | {cells} |")
        n = r["no_answer"]
        if "threshold_cosine" in n:
            lines += [
                "",
                f"Questions with no answer in the corpus: {n['questions']}. Their best vector "
                f"match has median cosine {n['median_top_cosine']}. Confidently wrong (best "
                f"match at least {n['threshold_cosine']}, the median best cosine of answerable "
                f"questions that vector search answers first): {n['confidently_wrong']}.",
            ]
        lines += ["", f"Hybrid at least as good as each alone: {r['hybrid_at_least_each_alone']}."]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=["float", "quantized"], default="float")
    parser.add_argument("--fast", action="store_true", help="only the test suite's slice")
    args = parser.parse_args()
    result = report(args.embedder, args.fast)
    shown = {k: v for k, v in result.items() if k not in ("modes", "ndcg_per_question")}
    print(json.dumps(shown, indent=2))
    for mode in MODES:
        print(mode, result["modes"][mode]["overall"])
    if args.fast:
        return
    path = RESULTS / "quality.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[args.embedder] = result
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "quality.md").write_text(markdown(results))


if __name__ == "__main__":
    main()
