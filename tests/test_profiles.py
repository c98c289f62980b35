"""Model profiles: shipped files, validation errors that name file and key, model resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agent_memory.agents.models.offline import OfflineModel
from agent_memory.agents.profiles import (
    CAPTURE_INSTRUCTIONS,
    RECALL_INSTRUCTIONS,
    Profile,
    available_profiles,
    default_profile,
    load_profile,
    parse_profile,
    profiles_dir,
)
from agent_memory.agents.tools import CAPTURE, READ
from agent_memory.errors import ProfileError
from agent_memory.provider import MemoryProvider

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("offline", "openai", "anthropic", "ollama")


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_profiles_load_by_name():
    assert set(SHIPPED) <= set(available_profiles())
    for name in SHIPPED:
        profile = load_profile(name)
        assert profile.name == name and profile.path == profiles_dir() / f"{name}.toml"
        assert profile.recall.tools == READ and profile.capture.tools == CAPTURE
        assert profile.recall.summary_tokens == 400 and profile.capture.summary_tokens is None
        assert profile.recall.max_steps >= 3 and profile.recall.timeout_s > 0
    offline = load_profile("offline")
    assert offline.recall.model == offline.capture.model == "offline"
    assert offline.recall.instructions == RECALL_INSTRUCTIONS and offline.capture.instructions == CAPTURE_INSTRUCTIONS
    ollama = load_profile("ollama")
    assert (
        isinstance(ollama.recall.model, str)
        and ollama.recall.model.startswith("litellm:ollama")
        and ollama.recall.api_base == "http://localhost:11434"
    )
    assert load_profile("openai").recall.api_key_env == "OPENAI_API_KEY"
    anthropic = load_profile("anthropic").capture.model
    assert isinstance(anthropic, str) and anthropic.startswith("litellm:anthropic/")


def test_top_level_profiles_are_identical_to_the_package_copies():
    top = {p.name: p.read_bytes() for p in (REPO / "profiles").glob("*.toml")}
    packaged = {p.name: p.read_bytes() for p in profiles_dir().glob("*.toml")}
    assert set(top) >= {f"{n}.toml" for n in SHIPPED}
    assert top == packaged


def test_default_is_offline_and_profile_objects_pass_through():
    assert load_profile().name == "offline" and load_profile(None).recall.model == "offline"
    built_in = default_profile()
    assert built_in.recall.model == "offline" and built_in.recall.tools == READ
    assert load_profile(built_in) is built_in


def test_load_by_path_with_narrowed_tools_and_instructions_file(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "recall.md").write_text("Only say what memory holds.\n", encoding="utf-8")
    path = write(
        tmp_path,
        """
[recall]
model = "offline"
instructions_file = "prompts/recall.md"
tools = ["memory_get", "memory_search"]
max_steps = 3
max_tool_calls = 5
timeout_s = 2.5
summary_tokens = 120
[capture]
instructions = "Capture carefully."
tools = ["memory_search", "memory_remember"]
temperature = 0.2
""",
    )
    profile = load_profile(path)
    assert profile.name == "p" and profile.path == path
    assert profile.recall.instructions == "Only say what memory holds."
    assert profile.recall.tools == ("memory_search", "memory_get")  # canonical order
    assert (profile.recall.max_steps, profile.recall.tool_calls_limit, profile.recall.timeout_s) == (3, 5, 2.5)
    assert profile.recall.summary_tokens == 120
    assert profile.capture.tools == ("memory_search", "memory_remember")
    assert profile.capture.instructions == "Capture carefully." and profile.capture.temperature == 0.2
    assert profile.capture.tool_calls_limit == 4 * profile.capture.max_steps
    assert load_profile(str(path)).recall.tools == profile.recall.tools  # a str path works too


@pytest.mark.parametrize(
    "text, key",
    [
        ("[recall]\nmodle = 'offline'\n", "modle"),
        ("[capture]\nsummary_tokens = 100\n", "summary_tokens"),
        ("colour = 'blue'\n", "colour"),
        ("[recall]\nmax_steps = 0\n", "max_steps"),
        ("[recall]\nmax_steps = true\n", "max_steps"),
        ("[recall]\ntimeout_s = 'soon'\n", "timeout_s"),
        ("[recall]\ntimeout_s = 0\n", "timeout_s"),
        ("[capture]\ntemperature = 5\n", "temperature"),
        ("[recall]\nsummary_tokens = -3\n", "summary_tokens"),
        ("[recall]\nmodel = ''\n", "model"),
        ("[recall]\nmodel = 'litellm:'\n", "model"),
        ("[recall]\nmodel = 'openai:gpt-4o'\napi_base = 'http://x'\n", "api_base"),
        ("[recall]\ntools = 'memory_search'\n", "tools"),
        ("[recall]\ninstructions = 'a'\ninstructions_file = 'b.md'\n", "instructions_file"),
        ("[recall]\ninstructions_file = 'missing.md'\n", "instructions_file"),
        ("recall = 3\n", "recall"),
    ],
)
def test_invalid_profiles_name_the_file_and_the_key(tmp_path, text, key):
    path = write(tmp_path, text, "bad-profile.toml")
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    message = str(err.value)
    assert str(path) in message and key in message


@pytest.mark.parametrize(
    "role, tool", [("recall", "memory_remember"), ("recall", "memory_forget"), ("capture", "memory_forget"), ("capture", "read_file")]
)
def test_a_profile_cannot_widen_a_workers_tools(tmp_path, role, tool):
    path = write(tmp_path, f'[{role}]\ntools = ["memory_search", "{tool}"]\n', "wide.toml")
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    message = str(err.value)
    assert str(path) in message and f"[{role}] tools" in message and tool in message


def test_unreadable_profiles(tmp_path):
    with pytest.raises(ProfileError, match="not-a-profile"):
        load_profile("not-a-profile")  # an unknown name lists the shipped ones
    with pytest.raises(ProfileError, match="offline"):
        load_profile("not-a-profile")
    with pytest.raises(ProfileError, match="not found"):
        load_profile(tmp_path / "nope.toml")
    broken = write(tmp_path, "[recall\nmodel = 1\n", "broken.toml")
    with pytest.raises(ProfileError, match="broken.toml.*invalid TOML"):
        load_profile(broken)
    with pytest.raises(ProfileError):
        load_profile(42)  # type: ignore[arg-type]


def test_model_resolution(tmp_path, monkeypatch):
    offline = default_profile()
    model = offline.recall.build_model()
    assert isinstance(model, OfflineModel) and model.role == "recall"
    capture_model = offline.capture.build_model()
    assert isinstance(capture_model, OfflineModel) and capture_model.role == "capture"

    test_model = parse_profile({"recall": {"model": "test"}}).recall.build_model()
    assert isinstance(test_model, TestModel)  # other strings go to pydantic-ai


@pytest.mark.litellm
def test_litellm_model_resolution(tmp_path, monkeypatch):
    pytest.importorskip("litellm")
    monkeypatch.setenv("AM_TEST_KEY", "key-from-env")
    path = write(
        tmp_path,
        """
[recall]
model = "litellm:openai/some-model"
api_base = "http://127.0.0.1:9/v1"
api_key_env = "AM_TEST_KEY"
temperature = 0.1
timeout_s = 3
[capture]
model = "test"
""",
    )
    profile = load_profile(path)
    from agent_memory.agents.models.litellm import LiteLLMModel

    lite = profile.recall.build_model()
    assert isinstance(lite, LiteLLMModel) and lite.model_name == "openai/some-model"
    assert lite.base_url == "http://127.0.0.1:9/v1" and lite._api_key == "key-from-env"
    assert lite._temperature == 0.1 and lite._timeout_s == 3.0
    assert isinstance(profile.capture.build_model(), TestModel)  # other strings go to pydantic-ai
    assert profile.recall.model_label == "litellm:openai/some-model"


def test_litellm_profile_without_litellm_names_the_extra(monkeypatch):
    import agent_memory.agents.models.litellm as litellm_model

    monkeypatch.setattr(litellm_model, "litellm_installed", lambda: False)
    for name in ("openai", "anthropic", "ollama"):
        with pytest.raises(ProfileError, match=r"\[recall\] model 'litellm:.*pip install 'agent-memory\[litellm\]'"):
            load_profile(name).recall.build_model()
    assert isinstance(load_profile("offline").recall.build_model(), OfflineModel)  # offline needs no extra


def test_pydantic_ai_model_problems_are_profile_errors(monkeypatch):
    with pytest.raises(ProfileError, match=r"\[capture\] model 'nosuchprovider:x'"):
        parse_profile({"capture": {"model": "nosuchprovider:x"}}).capture.build_model()

    import pydantic_ai.models

    def missing_sdk(spec: str) -> None:
        raise ImportError("Please install `anthropic` to use the Anthropic model")

    monkeypatch.setattr(pydantic_ai.models, "infer_model", missing_sdk)
    with pytest.raises(ProfileError, match=r"anthropic.*pip install 'agent-memory\[anthropic\]'"):
        parse_profile({"recall": {"model": "anthropic:claude-x"}}).recall.build_model()


def test_with_models_injects_model_instances():
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("x")])

    fn = FunctionModel(reply)
    profile = load_profile("offline").with_models(recall=fn)
    assert profile.recall.build_model() is fn and profile.recall.tools == READ
    assert profile.capture.model == "offline"
    assert "function" in profile.recall.model_label
    assert isinstance(profile, Profile) and profile.worker("capture") is profile.capture


def test_provider_resolves_its_profile_lazily(tmp_path):
    path = write(tmp_path, "[recall]\nsummary_tokens = 77\n")
    provider = MemoryProvider(tmp_path / "root", profile=path)
    assert provider.profile.recall.summary_tokens == 77
    assert provider.profile is provider.profile
    provider.close()
