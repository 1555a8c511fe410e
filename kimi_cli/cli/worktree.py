"""`kimi worktree list|merge|remove`: the worktrees `kimi --worktree` and `--attempts` made (kimi_cli.worktrees)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

worktree_app = typer.Typer(
    help="Manage the git worktrees kimi made (kimi --worktree, --attempts): list, merge, remove.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
Workdir = Annotated[
    Path | None, typer.Option("--workdir", "-w", help="The repository (default: here).", metavar="PATH")
]


def _root(workdir: Path | None) -> Path:
    return (workdir or Path.cwd()).resolve()


def _fail(exc: Exception) -> None:
    from kimi_cli.errors import KimiError
    from kimi_cli.util.sanitize import visible

    typer.echo(f"kimi: {visible(str(exc))}", err=True)
    raise typer.Exit(int(exc.exit_code) if isinstance(exc, KimiError) else 1)


@worktree_app.command("list")
def list_command(workdir: Workdir = None) -> None:
    """The repository's kimi worktrees: name, branch, commits and changed lines since they forked, folder."""
    from kimi_cli.errors import KimiError
    from kimi_cli.worktrees.trees import changes, list_worktrees

    try:
        found = list_worktrees(_root(workdir))
        for tree in found:
            commits, lines = changes(_root(workdir), tree)
            typer.echo(f"{tree.name}\t{tree.branch}\t{commits} commit(s)\t{lines} line(s)\t{tree.path}")
    except KimiError as exc:
        _fail(exc)
    if not found:
        typer.echo("no kimi worktrees (kimi --worktree makes one)", err=True)


@worktree_app.command("merge")
def merge_command(
    name: Annotated[str, typer.Argument(help="The worktree's name (or its branch).")],
    workdir: Workdir = None,
    remove: Annotated[bool, typer.Option("--remove", help="Remove the worktree and its branch once merged.")] = False,
) -> None:
    """Merge a worktree's branch into the main checkout (its uncommitted changes are committed on the branch
    first). A conflict is left in the main checkout to resolve: the files are listed."""
    from kimi_cli.errors import KimiError
    from kimi_cli.util.sanitize import visible
    from kimi_cli.worktrees import trees

    try:
        tree = trees.find(_root(workdir), name)
        if trees.commit_pending(tree, f"kimi: worktree {tree.name}"):
            typer.echo(f"kimi: committed the worktree's uncommitted changes on {tree.branch}", err=True)
        result = trees.merge(trees.main_root(_root(workdir)), tree.branch)
        if not result.merged:
            typer.echo(f"kimi: {visible(result.message)}", err=True)
            raise typer.Exit(1)
        typer.echo(f"kimi: merged {tree.branch} into {trees.main_root(_root(workdir))}", err=True)
        if remove:
            trees.remove(_root(workdir), tree.name)
            typer.echo(f"kimi: removed worktree {tree.name} and branch {tree.branch}", err=True)
    except KimiError as exc:
        _fail(exc)


@worktree_app.command("remove")
def remove_command(
    name: Annotated[str, typer.Argument(help="The worktree's name (or its branch).")],
    workdir: Workdir = None,
    keep_branch: Annotated[bool, typer.Option("--keep-branch", help="Keep the branch.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Remove it even with uncommitted changes.")] = False,
) -> None:
    """Remove a kimi worktree's folder and its branch."""
    from kimi_cli.errors import KimiError
    from kimi_cli.worktrees.trees import remove

    try:
        tree = remove(_root(workdir), name, keep_branch=keep_branch, force=force)
    except KimiError as exc:
        _fail(exc)
    typer.echo(f"kimi: removed worktree {tree.name}" + ("" if keep_branch else f" and branch {tree.branch}"), err=True)
