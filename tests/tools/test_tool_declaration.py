"""Declaring a tool with ``@tool``: what the model sees is read from the function it decorates."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from ide.settings import ToolSettings
from ide.tools.base import at_path, tool
from ide.tools.workspace import Workspace


class CountArgs(BaseModel):
    path: str = Field(description="File to count")


def test_the_name_arguments_and_description_come_from_the_function() -> None:
    @tool("read", title=lambda a: f"Count {a.path}", location=at_path)
    def count_lines(workspace: Workspace, settings: ToolSettings, args: CountArgs) -> str:
        """Count the lines of a file; the docstring is what the model reads, its line breaks
        and indentation   joined by single spaces."""
        return "3"

    assert count_lines.name == "count_lines"
    assert count_lines.args_model is CountArgs
    assert count_lines.description == (
        "Count the lines of a file; the docstring is what the model reads, its line breaks and indentation "
        "joined by single spaces."
    )
    args = CountArgs(path="a.py")
    assert (count_lines.kind, count_lines.title(args), count_lines.location(args)) == (
        "read",
        "Count a.py",
        ("a.py", None),
    )
    assert count_lines.touches is None


def test_a_tool_without_a_docstring_is_refused() -> None:
    with pytest.raises(TypeError, match="needs a docstring"):

        @tool("read", title=lambda a: "x")
        def undocumented(workspace: Workspace, settings: ToolSettings, args: CountArgs) -> str:
            return ""
