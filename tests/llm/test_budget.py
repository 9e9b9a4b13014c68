"""Structured calls get enough tokens for the longest answer their schema allows."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from pressurebench.llm.budget import max_answer_chars, structured_budget
from pressurebench.schemas import JudgeOutput, UserTurn


class Item(BaseModel):
    text: str = Field(max_length=40)
    flag: bool


class Nested(BaseModel):
    items: list[Item] = Field(max_length=3)
    label: str = Field(max_length=10)


class Unbounded(BaseModel):
    text: str


def test_longest_valid_answer_fits_the_bound():
    schema = Nested.model_json_schema()
    bound = max_answer_chars(schema)
    longest = Nested(items=[Item(text='"' * 40, flag=False)] * 3, label="\\" * 10)
    assert len(json.dumps(longest.model_dump())) <= bound < 4 * len(json.dumps(longest.model_dump()))


def test_budget_raises_a_small_cap_and_keeps_a_large_one():
    user = UserTurn.model_json_schema()
    assert structured_budget(user, 64) > 64
    assert structured_budget(user, 100_000) == 100_000
    assert structured_budget(JudgeOutput.model_json_schema(), 16) >= (2 * 600) // 2


def test_unbounded_schemas_keep_the_registry_cap():
    assert max_answer_chars(Unbounded.model_json_schema()) is None
    assert structured_budget(Unbounded.model_json_schema(), 77) == 77
