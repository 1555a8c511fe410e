"""The prompt lab's task set: ten small, real bug fixes, each a tiny repository with a failing test.

Each task is data: the files of the repository, the task as a user would type it, and one scripted
solution (the exact edit that fixes it), which `prompt_eval.py --scripted` plays through the scripted
server so the harness itself is tested end to end. The test must fail before the fix and pass after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    files: dict[str, str]
    fix: tuple[str, str, str]  # (path, old text, new text): the scripted solution's edit
    tests: tuple[str, ...] = field(default=("tests",))  # what pytest runs to judge the fix


# Every repository also gets this: `pytest` from the root finds the packages, as most projects set it up.
COMMON_FILES = {
    "pyproject.toml": '[project]\nname = "task"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
}

TASKS: list[Task] = [
    Task(
        "off-by-one",
        "tests/test_pages.py fails: page 1 of the listing skips the first items. Fix the code, not the test.",
        {
            "shop/pages.py": (
                "def page(items, number, size=10):\n"
                '    """Items on page `number` (pages start at 1)."""\n'
                "    start = number * size\n"
                "    return items[start : start + size]\n"
            ),
            "tests/test_pages.py": (
                "from shop.pages import page\n\n\n"
                "def test_first_page_starts_at_the_first_item():\n"
                "    assert page(list(range(25)), 1) == list(range(10))\n\n\n"
                "def test_last_page_is_partial():\n"
                "    assert page(list(range(25)), 3) == [20, 21, 22, 23, 24]\n"
            ),
        },
        ("shop/pages.py", "    start = number * size\n", "    start = (number - 1) * size\n"),
    ),
    Task(
        "mutable-default",
        "Tags leak between calls of tag_post: a new post starts with tags from an earlier one. Fix it.",
        {
            "blog/tags.py": (
                'def tag_post(title, tag, tags=[]):\n    tags.append(tag)\n    return {"title": title, "tags": tags}\n'
            ),
            "tests/test_tags.py": (
                "from blog.tags import tag_post\n\n\n"
                "def test_each_post_gets_its_own_tags():\n"
                '    tag_post("a", "x")\n'
                '    assert tag_post("b", "y")["tags"] == ["y"]\n\n\n'
                "def test_given_tags_are_extended():\n"
                '    assert tag_post("c", "z", ["w"])["tags"] == ["w", "z"]\n'
            ),
        },
        (
            "blog/tags.py",
            "def tag_post(title, tag, tags=[]):\n    tags.append(tag)\n",
            "def tag_post(title, tag, tags=None):\n    tags = [] if tags is None else tags\n    tags.append(tag)\n",
        ),
    ),
    Task(
        "missing-none-check",
        "display_name crashes with AttributeError for users without a nickname; they should show their name.",
        {
            "accounts/names.py": (
                "def display_name(user):\n"
                '    nickname = user.get("nickname")\n'
                '    return nickname.strip() or user["name"]\n'
            ),
            "tests/test_names.py": (
                "from accounts.names import display_name\n\n\n"
                "def test_nickname_wins():\n"
                '    assert display_name({"name": "Ada Lovelace", "nickname": " ada "}) == "ada"\n\n\n'
                "def test_no_nickname_falls_back_to_the_name():\n"
                '    assert display_name({"name": "Ada Lovelace", "nickname": None}) == "Ada Lovelace"\n'
                '    assert display_name({"name": "Alan Turing"}) == "Alan Turing"\n'
            ),
        },
        ("accounts/names.py", "    return nickname.strip() or", '    return (nickname or "").strip() or'),
    ),
    Task(
        "bad-regex",
        "is_valid_email rejects real addresses like first.last+news@mail.example.co.uk. Fix the check.",
        {
            "mail/validate.py": (
                "import re\n\n"
                'EMAIL = re.compile(r"^[\\w.]+@\\w+\\.\\w+$")\n\n\n'
                "def is_valid_email(address):\n"
                "    return EMAIL.match(address) is not None\n"
            ),
            "tests/test_validate.py": (
                "from mail.validate import is_valid_email\n\n\n"
                "def test_common_addresses_pass():\n"
                '    for good in ["a@b.io", "first.last+news@mail.example.co.uk", "x_y@sub-domain.org"]:\n'
                "        assert is_valid_email(good), good\n\n\n"
                "def test_broken_addresses_fail():\n"
                '    for bad in ["a@b", "@b.io", "a b@c.io", "a@b..io", "a@.io"]:\n'
                "        assert not is_valid_email(bad), bad\n"
            ),
        },
        (
            "mail/validate.py",
            'EMAIL = re.compile(r"^[\\w.]+@\\w+\\.\\w+$")',
            'EMAIL = re.compile(r"^[\\w.+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}$")',
        ),
    ),
    Task(
        "utf8-truncate",
        "truncate_utf8 raises UnicodeDecodeError on accented text (tests/test_text.py). Fix it.",
        {
            "textutil/cut.py": (
                "def truncate_utf8(text, max_bytes):\n"
                '    """The longest prefix of `text` whose UTF-8 encoding fits in `max_bytes`."""\n'
                '    return text.encode("utf-8")[:max_bytes].decode("utf-8")\n'
            ),
            "tests/test_text.py": (
                "from textutil.cut import truncate_utf8\n\n\n"
                "def test_ascii_is_cut_at_the_limit():\n"
                '    assert truncate_utf8("hello world", 5) == "hello"\n\n\n'
                "def test_a_character_is_never_split():\n"
                '    assert truncate_utf8("café au lait", 4) == "caf"\n'
                '    assert truncate_utf8("café au lait", 5) == "café"\n'
            ),
        },
        ("textutil/cut.py", '.decode("utf-8")\n', '.decode("utf-8", errors="ignore")\n'),
    ),
    Task(
        "sort-stability",
        "The ticket queue must be ordered by priority (high first), ties by name; ties come out wrong. Fix it.",
        {
            "tickets/order.py": (
                "def ordered(tickets):\n"
                '    by_priority = sorted(tickets, key=lambda t: -t["priority"])\n'
                '    return sorted(by_priority, key=lambda t: t["name"])\n'
            ),
            "tests/test_order.py": (
                "from tickets.order import ordered\n\n\n"
                "def test_priority_first_then_name():\n"
                '    tickets = [{"name": "b", "priority": 1}, {"name": "c", "priority": 2},\n'
                '               {"name": "a", "priority": 1}, {"name": "d", "priority": 2}]\n'
                '    assert [t["name"] for t in ordered(tickets)] == ["c", "d", "a", "b"]\n'
            ),
        },
        (
            "tickets/order.py",
            '    by_priority = sorted(tickets, key=lambda t: -t["priority"])\n'
            '    return sorted(by_priority, key=lambda t: t["name"])\n',
            '    by_name = sorted(tickets, key=lambda t: t["name"])\n'
            '    return sorted(by_name, key=lambda t: -t["priority"])\n',
        ),
    ),
    Task(
        "integer-division",
        "mean() of [1, 2] returns 1 instead of 1.5. Fix stats/mean.py.",
        {
            "stats/mean.py": "def mean(values):\n    return sum(values) // len(values)\n",
            "tests/test_mean.py": (
                "from stats.mean import mean\n\n\n"
                "def test_mean_keeps_fractions():\n"
                "    assert mean([1, 2]) == 1.5\n"
                "    assert mean([2, 4, 9]) == 5\n"
            ),
        },
        ("stats/mean.py", "sum(values) // len(values)", "sum(values) / len(values)"),
    ),
    Task(
        "dropped-last-chunk",
        "chunks() loses the last, shorter chunk: chunks([1,2,3,4,5], 2) misses [5]. Fix it.",
        {
            "batching/chunks.py": (
                "def chunks(items, size):\n"
                "    return [items[i : i + size] for i in range(0, len(items) - size + 1, size)]\n"
            ),
            "tests/test_chunks.py": (
                "from batching.chunks import chunks\n\n\n"
                "def test_the_last_chunk_may_be_short():\n"
                "    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\n\n\n"
                "def test_exact_multiples():\n"
                "    assert chunks([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]\n"
                "    assert chunks([], 3) == []\n"
            ),
        },
        ("batching/chunks.py", "range(0, len(items) - size + 1, size)", "range(0, len(items), size)"),
    ),
    Task(
        "mutation-during-iteration",
        "remove_empty() raises 'dictionary changed size during iteration'. Fix config/clean.py.",
        {
            "config/clean.py": (
                "def remove_empty(settings):\n"
                '    """Drop keys whose value is None or an empty string, in place; return the dict."""\n'
                "    for key, value in settings.items():\n"
                '        if value is None or value == "":\n'
                "            del settings[key]\n"
                "    return settings\n"
            ),
            "tests/test_clean.py": (
                "from config.clean import remove_empty\n\n\n"
                "def test_empty_values_go():\n"
                '    settings = {"a": 1, "b": None, "c": "", "d": 0}\n'
                '    assert remove_empty(settings) == {"a": 1, "d": 0}\n'
                '    assert settings == {"a": 1, "d": 0}\n'
            ),
        },
        ("config/clean.py", "in settings.items():", "in list(settings.items()):"),
    ),
    Task(
        "leap-year",
        "is_leap(2000) is False, but 2000 was a leap year. Fix calendar_tools/leap.py.",
        {
            "calendar_tools/leap.py": "def is_leap(year):\n    return year % 4 == 0 and year % 100 != 0\n",
            "tests/test_leap.py": (
                "from calendar_tools.leap import is_leap\n\n\n"
                "def test_gregorian_rules():\n"
                "    assert is_leap(2024) and is_leap(2000) and is_leap(1600)\n"
                "    assert not is_leap(1900) and not is_leap(2023) and not is_leap(2100)\n"
            ),
        },
        (
            "calendar_tools/leap.py",
            "year % 4 == 0 and year % 100 != 0",
            "year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        ),
    ),
]
