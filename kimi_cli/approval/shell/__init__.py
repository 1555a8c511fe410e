"""Shell command lines read exactly enough to decide approval rules: lexer.py (words, operators,
substitutions), syntax.py (the word rules), git_options.py (what git options run). The rules are in
kimi_cli/approval/rules.py."""
