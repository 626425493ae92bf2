"""The AI judge: an advisory 30 % share of each category score, fail-closed and cached.

The pipeline imports exactly what is exported here; see ``docs/internals.md`` for the seams.
"""

from taskeval.judge.cache import FileCache, JudgeCache, cache_key, default_cache_dir
from taskeval.judge.config import JudgeConfig, JudgeMode, make_client
from taskeval.judge.prompt import (
    PROMPT_VERSION,
    PromptTooLarge,
    RenderedPrompt,
    build_prompt,
    neutralise,
    render_prompt,
)
from taskeval.judge.run import CategoryJudgement, JudgeResult, run_judge

__all__ = [
    "PROMPT_VERSION",
    "CategoryJudgement",
    "FileCache",
    "JudgeCache",
    "JudgeConfig",
    "JudgeMode",
    "JudgeResult",
    "PromptTooLarge",
    "RenderedPrompt",
    "build_prompt",
    "cache_key",
    "default_cache_dir",
    "make_client",
    "neutralise",
    "render_prompt",
    "run_judge",
]
