"""``lnproofs homework new|check|grade``: generate exercises with solutions (for one student or a
whole class), check answers exactly, and grade a folder of submissions."""

from __future__ import annotations

import json
import sys
import time

from ..certificates.writes import write_text

__all__ = ["configure", "run"]


def configure(parser) -> None:
    from ..homework.problems import TOPICS

    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    new = sub.add_parser(
        "new",
        help="write a problem set, its solutions and problems.json",
        description="Write problems.{md,tex}, solutions.{md,tex}, problems.json (and PDFs "
        "when pdflatex is installed) into the output folder.",
    )
    new.add_argument("--seed", type=int, default=0, help="the same seed gives the same problems (default 0)")
    new.add_argument("--topics", default=None, help=f"comma-separated topics (default all): {','.join(TOPICS)}")
    new.add_argument("--out", default="homework", help="output folder (default: homework)")
    new.add_argument(
        "--roster",
        default=None,
        metavar="ROSTER.csv",
        help="a class: one problem set per student of this CSV roster (columns id, name, email; "
        "see docs/homework.md), written to OUT/students/ID and OUT/solutions/ID",
    )
    new.add_argument(
        "--notebook",
        action="store_true",
        help="also write homework.ipynb: the problems with answer cells that write the answers file",
    )
    new.add_argument(
        "--attempt",
        type=int,
        default=1,
        help="the attempt (1, 2, ...): each attempt gets a fresh variant of every problem (default 1)",
    )
    new.add_argument("--no-pdf", action="store_true", help="do not run pdflatex even when it is installed")
    new.add_argument("--json", action="store_true", help="print the written files as JSON")
    check = sub.add_parser(
        "check",
        help="check a student's answers file exactly",
        description="Exit status 0 if every answer is right, 1 if some are wrong, "
        "2 on bad input, 3 on an internal error (a bug of lnproofs).",
    )
    check.add_argument("answers", metavar="ANSWERS.json", help="the answers file (format: docs/homework.md)")
    check.add_argument(
        "--problems",
        default=None,
        metavar="DIR",
        help="folder written by 'homework new' (default: the folder holding ANSWERS.json)",
    )
    check.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    grade = sub.add_parser(
        "grade",
        help="grade every answers file in a folder: a gradebook and feedback",
        description="Check every answers file in SUBMISSIONS exactly against its student's "
        "own problems. Writes the gradebook CSV, the list of what could not be "
        "graded and a feedback file per student (or, with --format gradescope, "
        "Gradescope's results.json). Exit status 0 when every answers file was "
        "graded, 1 when some could not be or an answer was too complex to check "
        "(they are listed), 2 on bad input, 3 on an "
        "internal error (a bug of lnproofs).",
    )
    grade.add_argument("submissions", metavar="SUBMISSIONS", help="the folder of answers files (docs/homework.md)")
    grade.add_argument(
        "--problems",
        required=True,
        metavar="DIR",
        help="the folder written by 'homework new' (with --roster: the class folder)",
    )
    grade.add_argument(
        "--out", default=None, help="the gradebook CSV (default grades.csv), or results.json with --format gradescope"
    )
    grade.add_argument(
        "--format",
        default="csv",
        choices=("csv", "gradescope"),
        help="csv: gradebook, not-graded list and feedback files (default); gradescope: the "
        "autograder's results.json for one submission",
    )
    grade.add_argument(
        "--feedback",
        default=None,
        metavar="DIR",
        help="folder of the feedback files (default: OUT's name with _feedback)",
    )
    grade.add_argument(
        "--metadata",
        default=None,
        metavar="FILE",
        help="Gradescope's submission_metadata.json: the submitter's email picks the student",
    )
    grade.add_argument(
        "--policy",
        default=None,
        metavar="POLICY.json",
        help="the grading policy: feedback level per topic, when answers are shown, Gradescope's visibilities "
        "(docs/homework.md)",
    )
    grade.add_argument(
        "--now",
        default=None,
        metavar="DATETIME",
        help="the moment of grading for the policy's reveal_after dates (ISO 8601; default: the current time)",
    )
    grade.add_argument(
        "--lms",
        default=None,
        choices=("canvas", "moodle"),
        help="also write the totals as the LMS's gradebook import CSV (OUT's name with _canvas or _moodle)",
    )
    grade.add_argument("--assignment", default="Homework", help="the assignment's column name in the LMS CSV")
    grade.add_argument(
        "--nbgrader",
        default=None,
        metavar="DIR",
        help="also write the parts answered in words as nbgrader notebooks for manual grading into DIR",
    )
    grade.add_argument("--json", action="store_true", help="print the summary as JSON")
    export = sub.add_parser(
        "export",
        help="write the topics as questions of a course system",
        description="Write each topic as a PrairieLearn question (info.json, question.html, server.py "
        "whose generate and grade call lnproofs) into DIR/questions/lnproofs/TOPIC.",
    )
    export.add_argument("--prairielearn", required=True, metavar="DIR", help="the PrairieLearn course folder")
    export.add_argument("--topics", default=None, help=f"comma-separated topics (default all): {','.join(TOPICS)}")
    export.add_argument("--json", action="store_true", help="print the written files as JSON")


def _progress(label: str, unit: str):
    """A tqdm bar on stderr (drawn only on a terminal) and the ``progress(done, total)`` that moves it."""
    from tqdm import tqdm

    bar = tqdm(
        total=0,
        desc=label,
        unit=unit,
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        leave=False,
        dynamic_ncols=True,
    )

    def step(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, step


def _new_class(args) -> int:
    from ..homework.classroom import write_class
    from ..homework.roster import read_roster

    roster = read_roster(args.roster)
    bar, step = _progress("students", "student")
    with bar:
        summary = write_class(
            roster,
            args.seed,
            args.topics,
            args.out,
            pdf=not args.no_pdf,
            notebook=args.notebook,
            progress=step,
            attempt=args.attempt,
        )
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    count = len(summary["students"])
    print(f"wrote problem sets for {count} student{'s' if count != 1 else ''} (seed {args.seed}) to {args.out}:")
    print(f"  {summary['students_dir']}/ID   hand each student their folder (no answers in it)")
    print(f"  {summary['solutions_dir']}/ID  the instructor's solutions; keep them, and the seed, private")
    print(f"  {summary['class_file']}  the roster, seed and topics that 'homework grade --problems' reads")
    print(f"  {summary['answer_key']}  every student's answers, for the teacher")
    if summary["pdf_failed"]:
        print(
            f"  (pdflatex failed for {len(summary['pdf_failed'])} documents, e.g. {summary['pdf_failed'][0]}; "
            "the .tex files are complete)",
            file=sys.stderr,
        )
    return 0


def _new(args) -> int:
    from pathlib import Path

    from ..homework import generate, write_homework
    from ..kernel import OptionError, require

    require(args.seed >= 0, OptionError, f"--seed {args.seed} is negative; give a seed >= 0")
    if args.roster is not None:
        return _new_class(args)
    problem_set = generate(args.seed, args.topics, attempt=args.attempt)
    written = write_homework(problem_set, args.out, pdf=not args.no_pdf)
    if args.notebook:
        from ..homework.notebook import notebook_text

        written["homework.ipynb"] = Path(args.out) / "homework.ipynb"
        write_text(written["homework.ipynb"], notebook_text(problem_set))
    if args.json:
        print(
            json.dumps(
                {
                    "seed": args.seed,
                    "topics": [p.topic for p in problem_set.problems],
                    "files": {name: str(path) for name, path in written.items()},
                },
                indent=2,
            )
        )
    else:
        count = len(problem_set.problems)
        print(f"wrote {count} problem{'s' if count != 1 else ''} (seed {args.seed}) to {args.out}:")
        for name in written:
            print(f"  {name}")
        failed = [name for name in written if name.endswith(".log")]
        if failed:
            print(f"  (pdflatex failed; see {', '.join(failed)}; the .tex files are complete)", file=sys.stderr)
        elif "problems.pdf" not in written and not args.no_pdf:
            print("  (no PDF: pdflatex is not installed; the .tex files compile with any LaTeX distribution)")
    return 0


def _check(args) -> int:
    from pathlib import Path

    from ..homework import check_answers, load_answers, load_problem_set

    answers = load_answers(args.answers)
    folder = args.problems if args.problems is not None else Path(args.answers).parent
    problem_set = load_problem_set(folder)
    result = check_answers(problem_set, answers)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.to_text())
    return 0 if result.ok else 1


def _grade(args) -> int:
    from pathlib import Path

    from ..certificates.writes import output_file
    from ..homework.gradebook import gradebook_outputs, write_gradebook
    from ..homework.gradescope import write_gradescope
    from ..homework.grading import ProblemSource, grade_folder, metadata_student
    from ..kernel import FileFormatError, require

    source = ProblemSource.open(args.problems)
    folder = Path(args.submissions)
    require(
        folder.is_dir(),
        FileFormatError,
        f"submissions folder {folder} does not exist or is not a folder; give the folder of answers files",
    )
    forced = metadata_student(args.metadata, source.roster) if args.metadata is not None else None
    policy, now = _policy(args, source)
    if args.format == "gradescope":  # the outputs are checked before anything is graded
        output_file(args.out or "results.json")
    else:
        gradebook_outputs(args.out or "grades.csv", args.feedback)
    bar, step = _progress("grading", "file")
    started = time.monotonic()
    with bar:
        gradebook = grade_folder(folder, source, forced, progress=step)
    if args.format == "gradescope":
        path = write_gradescope(gradebook, args.out or "results.json", policy, now, time.monotonic() - started)
        written = {"results": str(path)}
    else:
        made = write_gradebook(gradebook, args.out or "grades.csv", args.feedback, policy, now)
        written = {k: str(v) for k, v in made.items()}
    written.update(_exports(args, gradebook))
    # one Gradescope submission says nothing about the rest of the class
    missing = [] if args.format == "gradescope" else list(gradebook.missing)
    summary = {
        "graded": len(gradebook.grades),
        "not_graded": [vars(n) for n in gradebook.not_graded],
        "too_complex": [vars(n) for n in gradebook.too_complex],
        "no_submission": [s.id for s in missing],
        "files": written,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"graded {len(gradebook.grades)} submission{'s' if len(gradebook.grades) != 1 else ''}; "
            f"{len(gradebook.not_graded)} not graded; {len(missing)} student"
            f"{'s' if len(missing) != 1 else ''} without a submission"
        )
        for item in gradebook.not_graded:
            print(f"  not graded: {item.file}" + (f" ({item.student})" if item.student else "") + f": {item.reason}")
        for item in gradebook.too_complex:
            print(f"  check by hand: {item.file} ({item.student}): {item.reason}")
        if missing:
            print("  no submission: " + ", ".join(s.id for s in missing))
        for name, path in written.items():
            print(f"  wrote {path}")
    if args.format == "gradescope":  # the outcome, readable or not, is in results.json for the student
        return 0
    return 1 if gradebook.not_graded or gradebook.too_complex else 0


def _policy(args, source):
    """The grading policy (the default: full feedback) and the moment of grading."""
    from datetime import datetime, timezone

    from ..homework.policy import DEFAULT_POLICY, parse_moment, read_policy

    policy = DEFAULT_POLICY if args.policy is None else read_policy(args.policy, source.topics)
    now = datetime.now(timezone.utc) if args.now is None else parse_moment(args.now, "--now")
    return policy, now


def _exports(args, gradebook) -> dict:
    """The LMS gradebook CSV and the nbgrader notebooks, when asked for."""
    from pathlib import Path

    from ..certificates.writes import output_file
    from ..homework.exports import lms_csv, write_nbgrader

    written = {}
    if args.lms is not None:
        out = Path(args.out or ("results.json" if args.format == "gradescope" else "grades.csv"))
        stem = out.name[: -len(out.suffix)] if out.suffix else out.name
        path = output_file(out.with_name(f"{stem}_{args.lms}.csv"))
        write_text(path, lms_csv(gradebook, args.lms, args.assignment))
        written["lms"] = str(path)
    if args.nbgrader is not None:
        written["nbgrader"] = str(Path(args.nbgrader))
        write_nbgrader(gradebook, args.nbgrader, assignment=args.assignment.replace(" ", "_").lower())
    return written


def _export(args) -> int:
    from ..homework.generate import parse_topics
    from ..homework.prairielearn import export_prairielearn

    written = export_prairielearn(args.prairielearn, parse_topics(args.topics))
    if args.json:
        print(json.dumps({topic: str(path) for topic, path in written.items()}, indent=2))
    else:
        print(f"wrote {len(written)} PrairieLearn questions to {args.prairielearn}:")
        for topic, path in written.items():
            print(f"  {path}")
    return 0


def run(args) -> int:
    from ..kernel import OptionError

    if args.action == "new":
        return _new(args)
    if args.action == "check":
        return _check(args)
    if args.action == "grade":
        return _grade(args)
    if args.action == "export":
        return _export(args)
    raise OptionError(
        "choose an action: 'lnproofs homework new', 'lnproofs homework check ANSWERS.json' or "
        "'lnproofs homework grade SUBMISSIONS --problems DIR'"
    )
