"""A strict reader for bash command lines: words, quotes, substitutions, redirections and operators.

It understands a subset of bash exactly and raises `Unreadable` for everything else (arithmetic,
`${x@P}` and other parameter operators, `case`, `[[`, arrays, unterminated quotes...). Approval rules
are decided on what it returns, so "I am not sure" must never read as "nothing there": a caller that gets
`Unreadable` asks the user instead of matching a rule.

Backslash-newline pairs are removed where bash removes them, before anything else looks at the text:
in command text (inside words, between the characters of an operator, after `$`) and in the lines of an
unquoted here-document (so `EO\\` + `F` ends `<<EOF`, and `$\\` + `(x)` is a substitution), never inside
single quotes, comments or a quoted here-document. The lexers of one line share one `_Source`, which
makes the removal as the reading reaches each position: what was read before is never moved.
"""

from __future__ import annotations

import re

from kimi_cli.approval.shell.syntax import (
    ANSI_C,
    ASSIGNMENT,
    KEYWORDS_CONTINUE,
    KEYWORDS_UNREADABLE,
    MAX_DEPTH,
    METACHARS,
    NAME,
    OPERATORS,
    REDIRECTS,
    SPECIAL_PARAMS,
    Redirect,
    Script,
    Simple,
    Token,
    Unreadable,
    Word,
)

__all__ = ["MAX_DEPTH", "NAME", "Redirect", "Script", "Simple", "Unreadable", "Word", "parse"]


def parse(command: str, depth: int = 0) -> Script:
    """The script's structure; raises Unreadable for anything outside the subset understood exactly."""
    if depth > MAX_DEPTH:
        raise Unreadable("nested too deeply")
    if "\x00" in command:
        raise Unreadable("NUL byte")
    lexer = _Lexer(_Source(command), depth)
    tokens = lexer.tokens()
    if lexer.pos != len(lexer.s):
        raise Unreadable("unbalanced )")
    script = _build(tokens)
    script.text = lexer.s
    return script


class _Source:
    """The text as bash reads it: backslash-newline pairs disappear at the position being read, where the
    context there joins lines (the caller knows: unquoted or double-quoted text)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pending = "\\\n" in text

    def join(self, pos: int) -> None:
        if not self.pending:
            return
        text, end = self.text, pos
        while text.startswith("\\\n", end):
            end += 2
        if end != pos:
            self.text = text[:pos] + text[end:]
            self.pending = "\\\n" in self.text


class _Lexer:
    def __init__(self, src: _Source, depth: int, closer: str = "") -> None:
        self.src = src
        self.pos = 0
        self.depth = depth
        self.closer = closer  # ")" inside $( ... ), where an unmatched ) ends the scan
        self.pending_heredocs: list[tuple[Token, str, bool, bool]] = []
        self.parens = 0

    @property
    def s(self) -> str:
        return self.src.text

    def _here(self) -> str:
        """The character at pos as bash reads it (continuations there removed); "" at the end."""
        self.src.join(self.pos)
        return self.s[self.pos] if self.pos < len(self.s) else ""

    def _at(self, text: str, at: int | None = None) -> bool:
        """Whether `text` (syntax characters) comes next at `at`, continuations between its characters
        removed as bash removes them (they are read in the same unquoted context)."""
        start = self.pos if at is None else at
        for k, ch in enumerate(text):
            self.src.join(start + k)
            if not self.s.startswith(ch, start + k):
                return False
        return True

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        while True:
            c = self._here()
            if not c:
                break
            if c in " \t":
                self.pos += 1
            elif c == "#":  # a comment ends at the newline, a backslash before it included
                end = self.s.find("\n", self.pos)
                self.pos = len(self.s) if end < 0 else end
            elif c == "\n":
                out.append(Token("op", "\n", self.pos, self.pos + 1))
                self.pos += 1
                self._read_heredocs()
            elif c == ")" and self.closer == ")" and self.parens == 0:
                break
            elif self._at("((") or self._at("$(("):
                raise Unreadable("arithmetic")
            elif c in "<>" and self._at("(", self.pos + 1):
                out.append(self._word())  # process substitution <( ... ) / >( ... )
            elif c in ";&|()<>":
                out.append(self._operator())
            else:
                out.append(self._word())
            if out and out[-1].kind == "redir" and out[-1].text in ("<<", "<<-"):
                out.append(self._heredoc_start(out[-1].text == "<<-"))
        if self.pending_heredocs:
            raise Unreadable("here-document without its end")
        if self.parens:
            raise Unreadable("unbalanced (")
        return out

    def _operator(self) -> Token:
        start = self.pos
        for op in REDIRECTS:
            if self._at(op):
                self.pos += len(op)
                return Token("redir", op, start, self.pos)
        for op in OPERATORS:
            if self._at(op):
                if op in (";;", ";;&", ";&"):
                    raise Unreadable("case terminator")
                self.pos += len(op)
                if op == "(":
                    self.parens += 1
                elif op == ")":
                    self.parens -= 1
                    if self.parens < 0:
                        raise Unreadable("unbalanced )")
                return Token("op", op, start, self.pos)
        raise Unreadable(f"operator at {start}")  # pragma: no cover - every metachar is covered above

    def _word(self) -> Token:
        start = self.pos
        value: list[str] = []
        known = True
        glob = False
        subs: list[Script] = []
        while True:
            c = self._here()
            if not c:
                break
            s = self.s
            if c in METACHARS:
                if c in "<>" and self._at("(", self.pos + 1):
                    subs.append(self._substitution(self.pos + 2))
                    known = False
                    continue
                break
            if c == "\\":
                if self.pos + 1 >= len(s):
                    raise Unreadable("backslash at the end")
                value.append(s[self.pos + 1])  # never a newline: _here removed that pair
                self.pos += 2
            elif c == "'":
                end = s.find("'", self.pos + 1)
                if end < 0:
                    raise Unreadable("unterminated '")
                value.append(s[self.pos + 1 : end])
                self.pos = end + 1
            elif c == "$" and self._at("'", self.pos + 1):
                value.append(self._ansi_c())
            elif c == '"' or (c == "$" and self._at('"', self.pos + 1)):
                self.pos += 1 if c == '"' else 2
                part, part_known = self._double_quoted(subs)
                value.append(part)
                known = known and part_known
            elif c == "$":
                part_known, text = self._dollar(subs)
                value.append(text)
                known = known and part_known
            elif c == "`":
                subs.append(self._backticks())
                known = False
            else:
                glob = glob or self._expands(c, start)
                value.append(c)
                self.pos += 1
        raw = self.s[start : self.pos]
        word = Word(raw, "".join(value) if known else None, glob, subs)
        fd_redirect = raw.isdigit() and self._here() in ("<", ">")
        if fd_redirect:
            tok = self._operator()
            tok.fd, tok.start = raw, start
            return tok
        return Token("word", raw, start, self.pos, word)

    def _expands(self, c: str, word_start: int) -> bool:
        """An unquoted glob, brace or tilde character here."""
        if c in "*?":
            return True
        # Quoted parts belong to the word: `/bin/r[' 'm]` is a pattern that matches rm, and `{rm,' x'}` is
        # brace expansion into `rm` and ` x`. A continuation in what follows could hide `..` or `,`: a pattern.
        if c == "[":
            rest = self._word_rest()
            return "]" in rest or "\\\n" in rest
        if c == "{":
            rest = self._word_rest()
            return "\\\n" in rest or re.match(r"\{[^}]*(,|\.\.)[^}]*\}", rest) is not None
        return c == "~" and self.pos == word_start

    def _word_rest(self) -> str:
        """The raw text from here to the end of this word, quoted parts (with their blanks) included."""
        s, i = self.s, self.pos
        while i < len(s) and s[i] not in METACHARS:
            if s[i] == "\\":
                i += 2
            elif s[i] in "'\"":
                end = s.find(s[i], i + 1)
                i = len(s) if end < 0 else end + 1
            else:
                i += 1
        return s[self.pos : i]

    def _ansi_c(self) -> str:
        """$'...': decode the escapes bash decodes, so `$'\\x72m'` reads as `rm`."""
        s = self.s
        i = self.pos + 2
        out: list[str] = []
        while i < len(s) and s[i] != "'":
            if s[i] != "\\":
                out.append(s[i])
                i += 1
                continue
            if i + 1 >= len(s):
                raise Unreadable("unterminated $'")
            e = s[i + 1]
            if e in ANSI_C:
                out.append(ANSI_C[e])
                i += 2
            elif e == "\n":
                raise Unreadable("a backslash-newline inside $'...'")
            elif e in "xuU":
                limit = {"x": 2, "u": 4, "U": 8}[e]
                m = re.match(f"[0-9A-Fa-f]{{1,{limit}}}", s[i + 2 :])
                if not m:
                    out.append("\\" + e)
                    i += 2
                    continue
                code = int(m.group(0), 16)
                if code > 0x10FFFF or code == 0:
                    raise Unreadable("escape out of range")
                out.append(chr(code))
                i += 2 + len(m.group(0))
            elif e in "01234567":
                m = re.match(r"[0-7]{1,3}", s[i + 1 :])
                assert m is not None
                code = int(m.group(0), 8) & 0xFF
                if code == 0:
                    raise Unreadable("NUL escape")
                out.append(chr(code))
                i += 1 + len(m.group(0))
            elif e == "c":
                if i + 2 >= len(s):
                    raise Unreadable("unterminated \\c")
                out.append(chr(ord(s[i + 2]) & 0x1F))
                i += 3
            else:
                out.append("\\" + e)
                i += 2
        if i >= len(s):
            raise Unreadable("unterminated $'")
        self.pos = i + 1
        return "".join(out)

    def _double_quoted(self, subs: list[Script]) -> tuple[str, bool]:
        out: list[str] = []
        known = True
        while True:
            c = self._here()
            if not c:
                raise Unreadable('unterminated "')
            s = self.s
            if c == '"':
                self.pos += 1
                return "".join(out), known
            if c == "\\" and self.pos + 1 < len(s) and s[self.pos + 1] in '$`"\\':
                out.append(s[self.pos + 1])
                self.pos += 2
            elif c == "$":
                if self._at("$(("):
                    raise Unreadable("arithmetic")
                part_known, text = self._dollar(subs, quoted=True)
                out.append(text)
                known = known and part_known
            elif c == "`":
                subs.append(self._backticks())
                known = False
            else:
                out.append(c)
                self.pos += 1

    def _dollar(self, subs: list[Script], quoted: bool = False) -> tuple[bool, str]:
        """$name, ${name}, $(...): (value known, literal text). Anything fancier is unreadable."""
        i = self.pos
        self.src.join(i + 1)
        s = self.s
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "(":
            if self._at("$((", i):
                raise Unreadable("arithmetic")
            subs.append(self._substitution(i + 2))
            return False, ""
        if nxt == "[":
            raise Unreadable("$[ arithmetic")
        if nxt == "{":
            end = s.find("}", i + 2)
            inner = s[i + 2 : end] if end >= 0 else ""
            if end < 0 or not (NAME.fullmatch(inner) or (len(inner) == 1 and inner in SPECIAL_PARAMS)
                               or (inner.startswith("#") and NAME.fullmatch(inner[1:]))):  # fmt: skip
                raise Unreadable("parameter expansion with an operator")
            self.pos = end + 1
            return False, ""
        m = NAME.match(s, i + 1)
        if m:
            self.pos = m.end()
            return False, ""
        if nxt and nxt in SPECIAL_PARAMS:
            self.pos = i + 2
            return False, ""
        self.pos = i + 1
        return True, "$"

    def _substitution(self, body_start: int) -> Script:
        """$( ... ), <( ... ), >( ... ): the body is read as a script up to its matching )."""
        if self.depth + 1 > MAX_DEPTH:
            raise Unreadable("nested too deeply")
        inner = _Lexer(self.src, self.depth + 1, closer=")")
        inner.pos = body_start
        tokens = inner.tokens()
        if inner.pos >= len(self.s) or self.s[inner.pos] != ")":
            raise Unreadable("unterminated substitution")
        self.pos = inner.pos + 1
        return _build(tokens)

    def _backticks(self) -> Script:
        s = self.s
        i = self.pos + 1
        body: list[str] = []
        while i < len(s) and s[i] != "`":
            if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "\n":
                raise Unreadable("a backslash-newline inside `...`")
            if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "`$\\":
                body.append(s[i + 1])
                i += 2
            else:
                body.append(s[i])
                i += 1
        if i >= len(s):
            raise Unreadable("unterminated `")
        self.pos = i + 1
        return parse("".join(body), self.depth + 1)

    def _heredoc_start(self, strip_tabs: bool) -> Token:
        """The delimiter word after << or <<-; the body is read after the end of the line."""
        while self._here() in (" ", "\t"):
            self.pos += 1
        if not self._here() or self._here() in METACHARS:
            raise Unreadable("here-document without a delimiter")
        tok = self._word()
        target = tok.word
        if tok.kind != "word" or target is None or target.value is None or target.subs:
            raise Unreadable("here-document delimiter with an expansion")
        expands = not any(q in target.raw for q in "'\"\\")
        self.pending_heredocs.append((tok, target.value, strip_tabs, expands))
        return tok

    def _heredoc_line(self, joins: bool) -> str:
        """The next line of a here-document body. In an unquoted one bash removes every backslash-newline
        first (`EO\\` + `F` is the line `EOF`); a backslash before anything else stays, with that character."""
        s, i = self.s, self.pos
        out: list[str] = []
        while i < len(s) and s[i] != "\n":
            if joins and s[i] == "\\" and i + 1 < len(s):
                if s[i + 1] != "\n":
                    out.append(s[i : i + 2])
                i += 2
                continue
            out.append(s[i])
            i += 1
        self.pos = min(i + 1, len(s))
        return "".join(out)

    def _read_heredocs(self) -> None:
        for tok, delimiter, strip_tabs, expands in self.pending_heredocs:
            lines: list[str] = []
            while True:
                if self.pos >= len(self.s):
                    raise Unreadable("here-document without its end")
                line = self._heredoc_line(joins=expands)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            body = "\n".join(lines)
            if expands and re.search(r"`|\$[({\[]", body):
                raise Unreadable("substitution in a here-document")
            tok.heredoc = body
        self.pending_heredocs = []


def _build(tokens: list[Token]) -> Script:
    """Group tokens into simple commands; reserved words that begin a command are noted, not run."""
    script = Script()
    current: Simple | None = None
    dangling = False  # the last thing seen was an operator that needs a command after it
    i = 0

    def close() -> None:
        nonlocal current
        if current is not None and not current.empty:
            script.commands.append(current)
        current = None

    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "op":
            if tok.text == "(" and current is not None and current.words:
                raise Unreadable("function definition")
            close()
            script.operators.append(tok.text)
            dangling = tok.text in ("&&", "||", "|", "|&")
            i += 1
            continue
        dangling = False
        if current is None:
            current = Simple(tok.start)
        current.end = tok.end
        if tok.kind == "redir":
            if i + 1 >= len(tokens) or tokens[i + 1].kind != "word":
                raise Unreadable("redirection without a target")
            target = tokens[i + 1].word
            assert target is not None
            current.redirects.append(Redirect(tok.fd + tok.text, target, tokens[i + 1].heredoc))
            current.end = tokens[i + 1].end
            i += 2
            continue
        word = tok.word
        assert word is not None
        if not current.words and not current.assignments and not current.redirects:
            if word.value in KEYWORDS_UNREADABLE and not word.raw.startswith(("'", '"', "\\")):
                raise Unreadable(f"`{word.value}`")
            if word.value in KEYWORDS_CONTINUE and word.raw == word.value:
                script.keywords.append(word.value)
                current = None
                i += 1
                # `time -p -- rm x` runs rm: the keyword's own options are not the command's name.
                while (
                    word.value == "time"
                    and i < len(tokens)
                    and tokens[i].kind == "word"
                    and tokens[i].text in ("-p", "--")
                ):
                    i += 1
                continue
            if word.value == "for" and word.raw == "for":
                script.keywords.append("for")
                current.data = True
                i += 1
                while i < len(tokens) and not (tokens[i].kind == "op" and tokens[i].text in (";", "\n")):
                    if tokens[i].kind != "word":
                        raise Unreadable("for loop")
                    current.words.append(tokens[i].word)  # type: ignore[arg-type]
                    current.end = tokens[i].end
                    i += 1
                close()
                continue
        if not current.words and (m := ASSIGNMENT.match(word.raw)):
            rest = word.raw[m.end() :]
            if rest.startswith("("):
                raise Unreadable("array assignment")
            current.assignments.append((m.group(1), _assignment_value(word, rest)))
        else:
            current.words.append(word)
        i += 1
    close()
    if dangling:
        raise Unreadable("operator without a command after it")
    return script


def _assignment_value(word: Word, rest_raw: str) -> Word:
    """The value part of NAME=value, as a word of its own."""
    if word.value is None:
        return Word(rest_raw, None, word.glob, word.subs)
    eq = word.value.find("=")
    return Word(rest_raw, word.value[eq + 1 :], word.glob, word.subs)
