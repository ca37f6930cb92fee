"""Length and count limits of the lead's forms (issue 21's sweep of free-text inputs)."""

from annotate.forms import MAX_GUIDELINES, MAX_TASK_LINES, ProjectForm, TasksForm


def test_task_lines_over_the_cap_are_refused_with_the_cap_named(db):
    form = TasksForm({"source": "list", "k": 20, "lines": "1 D\n" * (MAX_TASK_LINES + 1)})
    assert not form.is_valid()
    assert form.errors["lines"] == [
        "5,001 lines: at most 5,000 at a time. Split them, or import them as a qrels file and "
        "use the reference source."
    ]
    assert TasksForm({"source": "list", "k": 20, "lines": "1 D\n" * MAX_TASK_LINES}).is_valid()


def test_guidelines_and_names_have_a_length_limit(db):
    form = ProjectForm({"name": "n" * 201, "guidelines": "g" * (MAX_GUIDELINES + 1)})
    assert not form.is_valid()
    assert "at most 200 characters" in form.errors["name"][0]
    assert "at most 20000 characters" in form.errors["guidelines"][0]
