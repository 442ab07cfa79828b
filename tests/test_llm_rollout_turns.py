"""The LLM rollout's turns: real chat templates, the per-turn token cap on every generator, vLLM's log-probs.

The chat templates are the ones TRL ships (``trl/chat_templates/*.jinja``: Qwen3, Qwen2.5 and
Qwen3-Instruct-2507), set on SmolLM2's tokenizer, which speaks the same ChatML tokens
(``<|im_start|>``, ``<|im_end|>``). Qwen3's template drops the ``<think>`` block of every
assistant turn before the last user message, so a rollout that re-rendered the conversation
would no longer extend the tokens it generated: the rollout must append, never re-render.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wmrl.agent.llm.solution import reply_for
from wmrl.ledger import ComputeLedger
from wmrl.sandbox import SandboxFacts
from wmrl.trainer.llm.rollout import LLMTrajectory, LLMTurn, RolloutSettings, rollout, sampling_logprobs
from wmrl.trainer.rollout import Scorer

LAPTOP = SandboxFacts("local", 30.0, 150.0, 2048, 1.0, 0, False, ())
TEMPLATES = ("qwen3", "qwen2_5", "qwen3_instruct_2507")


def _template(name: str) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text()


@pytest.fixture(scope="module")
def base_tokenizer(smollm2_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_folder))


def _tokenizer(base, template: str):
    import copy

    tok = copy.deepcopy(base)
    tok.chat_template = _template(template)
    return tok


class Scripted:
    """Replies given in advance (one per turn, the same for every row); records the contexts and budgets."""

    def __init__(self, tokenizer, replies: list[str], logprob: float | None = None, stop: bool = True):
        self.tok, self.replies, self.logprob, self.stop = tokenizer, list(replies), logprob, stop
        self.calls: list[list[list[int]]] = []
        self.budgets: list[int] = []

    def generate(self, contexts, max_new_tokens, seed):
        self.calls.append([list(c) for c in contexts])
        self.budgets.append(max_new_tokens)
        if not contexts:
            return [], ([] if self.logprob is not None else None)
        text = self.replies.pop(0)
        ids = self.tok(text, add_special_tokens=False)["input_ids"][:max_new_tokens - 1 if self.stop else max_new_tokens]
        ids = ids + [self.tok.eos_token_id] if self.stop else ids
        out = [list(ids) for _ in contexts]
        return out, (None if self.logprob is None else [[self.logprob - k for k in range(len(o))] for o in out])


class FailingWM:
    """Every script fails with a KeyError, so every turn gets a feedback turn."""

    def predict_many(self, items):
        from wmrl.world_model.base import aggregate

        return [aggregate([{"check": "data_refs", "verdict": "fail", "error_type": "KeyError", "error_line": 2,
                            "reason": "column 'target' is not in train.csv"}]) for _ in items]


class NoSandbox:
    def run_many(self, jobs, max_workers):
        raise AssertionError("a predicted row was executed")


def _settings(**kw) -> RolloutSettings:
    return RolloutSettings(sandbox=LAPTOP, **{"contract": "fit_predict", "max_turns": 3, "max_new_tokens": 400,
                                              "obs_max_tokens": 64, **kw})


def _roll(tok, gen, task, settings, rows: int = 1):
    scorer = Scorer(NoSandbox(), FailingWM(), ComputeLedger(), None, 1)
    return rollout(gen, tok, [task] * rows, np.zeros(rows, bool), np.ones(rows, bool), scorer, settings, seed=0)


CODE = "def fit_predict(train, test):\n    return train['target']\n"
THINK = "<think>\nThe target column is probably called target. ```python\nimport os\n```\n</think>\n\n"


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("thinking", [False, True], ids=["plain", "think"])
def test_every_turn_extends_the_tokens_generated_so_far_under_each_real_template(pool, base_tokenizer, template,
                                                                                 thinking):
    """Qwen3's template drops earlier <think> blocks: re-rendering failed here on the first feedback turn."""
    tok = _tokenizer(base_tokenizer, template)
    task = pool["iris_species"]
    reply = (THINK if thinking else "") + reply_for(CODE)
    gen = Scripted(tok, [reply] * 3)
    (traj,) = _roll(tok, gen, task, _settings())
    assert len(traj.turns) == 3 and all(t.code == CODE for t in traj.turns)  # code after the thinking, every turn
    first, second, _ = traj.turns
    # each context is exactly the previous one plus the reply and the feedback: nothing generated is re-rendered
    assert gen.calls[0][0] == traj.prompt_ids
    assert gen.calls[1][0] == traj.prompt_ids + first.reply_ids + first.feedback_ids
    assert gen.calls[2][0] == gen.calls[1][0] + second.reply_ids + second.feedback_ids
    feedback = tok.decode(first.feedback_ids)
    assert feedback.startswith("\n<|im_start|>user\n")  # the reply's own <|im_end|> closed its turn
    assert "KeyError" in feedback and feedback.endswith("<|im_start|>assistant\n")
    assert tok.decode(traj.completion_ids).count("<|im_end|>") == 5  # 3 replies, 2 feedback turns, once each


@pytest.mark.parametrize("template", ["qwen2_5", "qwen3_instruct_2507"])
def test_with_a_template_that_keeps_history_the_tokens_are_the_templates_own_rendering(pool, base_tokenizer, template):
    """Where re-rendering is stable, appending yields exactly what the template renders for the whole conversation."""
    tok = _tokenizer(base_tokenizer, template)
    task = pool["iris_species"]
    gen = Scripted(tok, [reply_for(CODE)] * 2)
    settings = _settings(max_turns=2)
    (traj,) = _roll(tok, gen, task, settings)
    first = traj.turns[0]
    conversation = [*settings.messages(task), {"role": "assistant", "content": first.reply},
                    {"role": "user", "content": tok.decode(first.feedback_ids).split("<|im_start|>user\n")[1]
                     .split("<|im_end|>")[0]}]
    rendered = tok.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    assert tok.decode(gen.calls[1][0]) == rendered


def test_qwen3_without_thinking_renders_the_empty_block_in_every_generation_prompt(pool, base_tokenizer):
    tok = _tokenizer(base_tokenizer, "qwen3")
    task = pool["iris_species"]
    on, off = (_roll(tok, Scripted(tok, [reply_for(CODE)] * 2), task, _settings(max_turns=2, enable_thinking=e))[0]
               for e in (True, False))
    assert not tok.decode(on.prompt_ids).endswith("</think>\n\n")
    assert tok.decode(off.prompt_ids).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert tok.decode(off.turns[0].feedback_ids).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_a_reply_cut_by_the_budget_gets_the_end_of_turn_from_the_feedback(pool, base_tokenizer):
    tok = _tokenizer(base_tokenizer, "qwen3")
    gen = Scripted(tok, [reply_for(CODE)] * 2, stop=False)
    (traj,) = _roll(tok, gen, pool["iris_species"], _settings(max_turns=2, max_new_tokens=8))
    first = traj.turns[0]
    assert len(first.reply_ids) == 8 and first.reply_ids[-1] != tok.eos_token_id and first.malformed is False
    assert tok.decode(first.feedback_ids).startswith("<|im_end|>\n<|im_start|>user\n")


def test_a_reply_that_only_thinks_has_no_code_and_is_malformed(pool, base_tokenizer):
    tok = _tokenizer(base_tokenizer, "qwen3")
    gen = Scripted(tok, ["<think>\nI could write ```python\nx = 1\n``` but"] * 2)
    (traj,) = _roll(tok, gen, pool["iris_species"], _settings(max_turns=2))
    assert all(t.malformed for t in traj.turns)


# -- the per-turn cap -------------------------------------------------------------------------------------------

def test_the_rollout_asks_every_turn_for_the_per_turn_budget_and_refuses_a_longer_turn(pool, base_tokenizer):
    tok = _tokenizer(base_tokenizer, "qwen2_5")
    gen = Scripted(tok, [reply_for(CODE)] * 3)
    _roll(tok, gen, pool["iris_species"], _settings(max_new_tokens=123))
    assert gen.budgets == [123, 123, 123]

    class Overlong(Scripted):
        def generate(self, contexts, max_new_tokens, seed):
            return [[tok.eos_token_id] * (max_new_tokens + 1) for _ in contexts], None

    with pytest.raises(RuntimeError, match="over the per-turn budget max_new_tokens=5"):
        _roll(tok, Overlong(tok, []), pool["iris_species"], _settings(max_new_tokens=5))


def test_bad_rollout_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1"):
        RolloutSettings(sandbox=LAPTOP, max_new_tokens=0)
    with pytest.raises(TypeError, match="sandbox"):
        RolloutSettings(contract="script")  # the sandbox that runs the code has no default


def test_the_paper_presets_rollout_caps_each_turn_at_4096_tokens_and_states_its_sandbox():
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import rollout_settings

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    s = rollout_settings(cfg)
    assert (s.max_new_tokens, s.max_turns, s.obs_max_tokens) == (4096, 4, 1024)
    assert (s.sandbox.cpu_budget_s, s.sandbox.gpus) == (cfg.sandbox.timeout_s, cfg.sandbox.gpus)
    assert s.enable_thinking == cfg.llm.enable_thinking


class RecordingModel:
    """Stands in for a causal LM: records the keyword arguments of ``generate``, answers ``max_new_tokens`` tokens."""

    training, device = False, "cpu"

    def __init__(self, token: int):
        self.token, self.kwargs = token, []

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def generate(self, input_ids, **kw):
        import torch

        self.kwargs.append(kw)
        new = torch.full((input_ids.shape[0], kw["max_new_tokens"]), self.token)
        return torch.cat([input_ids, new], dim=1)


def test_smollm2s_tokenizer_has_the_special_tokens_its_gguf_header_names(base_tokenizer):
    """A turn ends at <|im_end|> and batches pad with it, whichever transformers converted the GGUF file."""
    tok = base_tokenizer
    assert (tok.bos_token, tok.eos_token, tok.pad_token, tok.unk_token) == (
        "<|im_start|>", "<|im_end|>", "<|im_end|>", "<|endoftext|>")
    from wmrl.models import gguf_special_token_ids, smollm2_gguf

    header = gguf_special_token_ids(smollm2_gguf())
    assert {name: getattr(tok, f"{name}_id") for name in header} == header
    assert set(header.values()) <= set(tok.all_special_ids)


def test_the_transformers_generator_hands_the_cap_to_generate(base_tokenizer):
    from wmrl.trainer.llm.generate import TransformersGenerator

    model = RecordingModel(token=42)
    gen = TransformersGenerator(model, base_tokenizer, batch_size=2)
    out, logprobs = gen.generate([[1, 2, 3], [4, 5], [6]], 7, seed=0)
    assert [k["max_new_tokens"] for k in model.kwargs] == [7, 7] and logprobs is None
    assert [len(o) for o in out] == [7, 7, 7]


@pytest.mark.slow
def test_a_real_tiny_model_never_samples_past_the_cap(tmp_path, smollm2_folder):
    from wmrl.agent.llm.model import load_causal_lm
    from wmrl.models import tiny_llama
    from wmrl.trainer.llm.generate import TransformersGenerator

    model, tok = load_causal_lm(tiny_llama(tmp_path / "tiny", smollm2_folder))
    gen = TransformersGenerator(model, tok, batch_size=4)
    contexts = [tok("hello there", add_special_tokens=False)["input_ids"]] * 4
    out, _ = gen.generate(contexts, 9, seed=1)
    assert all(1 <= len(o) <= 9 for o in out) and any(len(o) == 9 for o in out)
    out, _ = gen.generate(contexts, 3, seed=1)
    assert all(1 <= len(o) <= 3 for o in out)


@pytest.mark.slow
def test_rows_of_one_conversation_share_its_prefill_and_sample_what_separate_prefills_would(tmp_path, smollm2_folder):
    """A group's rows are one prompt: it is prefilled once and its keys and values repeated per row. The tokens
    sampled at a seed are those of prefilling every row (greedy and at temperature 1), and other contexts in
    the same call are sampled apart."""
    from wmrl.agent.llm.model import load_causal_lm
    from wmrl.models import tiny_llama
    from wmrl.trainer.llm.generate import TransformersGenerator

    model, tok = load_causal_lm(tiny_llama(tmp_path / "tiny", smollm2_folder))
    prompt = tok("a prompt that several rows share, as a group does", add_special_tokens=False)["input_ids"]
    for temperature in (0.0, 1.0):
        gen = TransformersGenerator(model, tok, temperature, batch_size=8)
        shared = gen._batch([prompt] * 5, 12, seed=3, shared=True)
        assert shared == gen._batch([prompt] * 5, 12, seed=3)
        if temperature:
            assert len({tuple(r) for r in shared}) > 1, "the rows are sampled, not copied"
    other = tok("another conversation", add_special_tokens=False)["input_ids"]
    gen = TransformersGenerator(model, tok, 1.0, batch_size=8)
    out, _ = gen.generate([prompt, other, prompt, prompt], 12, seed=5)
    assert [out[0], out[2], out[3]] == gen._batch([prompt] * 3, 12, seed=5 + 0, shared=True)
    assert out[1] == gen._batch([other], 12, seed=5 + 1)[0]


# -- vLLM: TRL's own generation code, the vLLM engine faked ------------------------------------------------------

class _Logprob:
    def __init__(self, logprob, rank):
        self.logprob, self.rank = logprob, rank


class _Completion:
    def __init__(self, ids, top):
        self.token_ids = ids
        # the sampled token ranks `top`-th of what vLLM reports; the most probable token (rank 1) is another
        self.logprobs = [{t: _Logprob(-0.1 * (k + 1), top), 7: _Logprob(-0.01, 1)} if top > 1 else
                         {t: _Logprob(-0.1 * (k + 1), 1)} for k, t in enumerate(ids)]


class FakeLLM:
    """vLLM's ``LLM`` as TRL's colocate mode calls it: answers ``max_tokens`` tokens per prompt."""

    def __init__(self, top: int = 1):
        self.top, self.params = top, []

    def generate(self, prompts, sampling_params, use_tqdm=False):
        self.params.append(sampling_params)
        n = sampling_params.kwargs["max_tokens"]
        return [type("Out", (), {"prompt_token_ids": p["prompt_token_ids"],
                                 "outputs": [_Completion([100 + i for i in range(n)], self.top)]})()
                for p in prompts]


class RecordedParams:
    """Stands in for ``vllm.SamplingParams``: records what TRL builds it with."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


def _trl_engine(monkeypatch, llm, max_completion_length=20608, generation_kwargs=None):
    import trl.generation.vllm_generation as vg

    monkeypatch.setattr(vg, "SamplingParams", RecordedParams, raising=False)
    engine = object.__new__(vg.VLLMGeneration)  # TRL's own generate(), without starting an engine
    import torch

    engine.__dict__.update(mode="colocate", enable_sleep_mode=False, tensor_parallel_size=1, llm=llm,
                           model=torch.nn.Module(),  # the policy TRL asks whether it is a peft model
                           accelerator=None, temperature=1.0, top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0,
                           max_completion_length=max_completion_length, logprobs=0,
                           generation_kwargs=generation_kwargs or {}, structured_outputs_regex=None)
    args = type("Args", (), {"vllm_importance_sampling_correction": True})()
    return engine, type("Trainer", (), {"vllm_generation": engine, "args": args})()


def test_the_vllm_generator_samples_each_turn_within_its_budget_and_returns_the_samplers_logprobs(monkeypatch):
    """TRL's engine samples up to max_completion_length (the whole trajectory's 20,608 tokens at paper scale)."""
    from wmrl.trainer.llm.generate import VLLMGenerator

    llm = FakeLLM()
    engine, trainer = _trl_engine(monkeypatch, llm)
    gen = VLLMGenerator(trainer)
    out, logprobs = gen.generate([[1, 2], [3]], 5, seed=0)
    assert [p.kwargs["max_tokens"] for p in llm.params] == [5]
    assert engine.max_completion_length == 20608  # restored after the turn
    assert [len(o) for o in out] == [5, 5]
    assert logprobs == [[pytest.approx(-0.1 * (k + 1)) for k in range(5)]] * 2


def test_the_vllm_generator_takes_the_sampled_tokens_logprob_not_the_top_ranked_one(monkeypatch):
    from wmrl.trainer.llm.generate import VLLMGenerator

    _, trainer = _trl_engine(monkeypatch, FakeLLM(top=3))
    trainer.vllm_generation.logprobs = 2
    _, logprobs = VLLMGenerator(trainer).generate([[1]], 3, seed=0)
    assert logprobs == [[pytest.approx(-0.1), pytest.approx(-0.2), pytest.approx(-0.3)]]


def test_with_no_row_left_anywhere_the_vllm_server_is_not_asked(monkeypatch):
    from wmrl.trainer.llm.generate import VLLMGenerator

    engine, trainer = _trl_engine(monkeypatch, FakeLLM())
    engine.mode = "server"

    def refuse(**kwargs):
        raise AssertionError("the vLLM server was asked for no prompts")

    engine.generate = refuse
    assert VLLMGenerator(trainer).generate([], 5, seed=0) == ([], [])


def test_a_max_tokens_in_generation_kwargs_is_refused(monkeypatch):
    from wmrl.trainer.llm.generate import VLLMGenerator

    _, trainer = _trl_engine(monkeypatch, FakeLLM(), generation_kwargs={"max_tokens": 99})
    with pytest.raises(ValueError, match="max_tokens"):
        VLLMGenerator(trainer)


# -- log-probs through the trajectory ---------------------------------------------------------------------------

def test_the_trajectorys_logprobs_align_with_its_completion_and_are_zero_on_feedback(pool, base_tokenizer):
    tok = _tokenizer(base_tokenizer, "qwen3")
    gen = Scripted(tok, [reply_for(CODE)] * 3, logprob=-0.5)
    rows = _roll(tok, gen, pool["iris_species"], _settings(), rows=2)
    for traj in rows:
        lps, mask = traj.logprobs, traj.env_mask
        assert len(lps) == len(traj.completion_ids) == len(mask)
        assert all(lp == 0.0 for lp, m in zip(lps, mask) if m == 0)
        assert [lp for lp, m in zip(lps, mask) if m == 1] == [lp for t in traj.turns for lp in t.reply_logprobs]
        assert traj.turns[0].reply_logprobs[:2] == [-0.5, -1.5]
    assert sampling_logprobs(rows) == [r.logprobs for r in rows]


def test_without_the_samplers_logprobs_the_rollout_hands_trl_none():
    with_lp = LLMTrajectory(None, 0, True, False, [1], [LLMTurn([5, 6], "", None, None, feedback_ids=[7],
                                                                reply_logprobs=[-1.0, -2.0])])
    without = LLMTrajectory(None, 1, True, False, [1], [LLMTurn([5], "", None, None)])
    assert with_lp.logprobs == [-1.0, -2.0, 0.0]
    assert sampling_logprobs([with_lp, without]) is None and sampling_logprobs([with_lp]) == [[-1.0, -2.0, 0.0]]


# -- log-probs through TRL's importance-sampling correction -----------------------------------------------------

class SelfScoringGenerator:
    """Samples with a real model and reports its own log-probs of the sampled tokens, as vLLM would."""

    def __init__(self, model, tokenizer):
        from wmrl.trainer.llm.generate import TransformersGenerator

        self.model, self.inner = model, TransformersGenerator(model, tokenizer, batch_size=4)

    def generate(self, contexts, max_new_tokens, seed):
        import torch

        out, _ = self.inner.generate(contexts, max_new_tokens, seed)
        logprobs = []
        with torch.no_grad():
            for ctx, ids in zip(contexts, out):
                logits = self.model(torch.tensor([list(ctx) + ids])).logits[0, len(ctx) - 1:-1].float()
                logp = torch.log_softmax(logits, dim=-1)
                logprobs.append(logp[torch.arange(len(ids)), torch.tensor(ids)].tolist())
        return out, logprobs


def _trl_ratio(folder, tmp_path, rollout_func):
    """TRL's vLLM importance-sampling ratio of one generation batch, TRL's engine switched on but never started."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], num_generations=2,
                      per_device_train_batch_size=2, max_steps=1, scale_rewards="none", beta=0.0,
                      gradient_checkpointing=False, vllm_importance_sampling_mode="token_truncate")
    trainer = GRPOTrainer(model=str(folder), reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                          args=args, train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}]),
                          rollout_func=rollout_func)
    trainer.use_vllm, trainer._last_loaded_step = True, trainer.state.global_step  # the correction's code path
    assert trainer.vllm_importance_sampling_correction  # TRL's default
    trainer.model.train()
    out = trainer._generate_and_score_completions([{"prompt": [{"role": "user", "content": "x"}]} for _ in range(2)])
    mask = (out["completion_mask"] * out["tool_mask"]).bool()
    return out["importance_sampling_ratio"], mask


@pytest.mark.slow
def test_trls_importance_sampling_ratio_is_one_when_the_sampler_is_the_policy(pool, tmp_path, smollm2_folder):
    """The sampler's log-probs line up with TRL's own on every model token of a multi-turn completion
    (feedback positions out); shifted by one token they do not; and None, what the rollout returned, is a TypeError."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from wmrl.models import tiny_llama

    folder = tiny_llama(tmp_path / "tiny", smollm2_folder)
    tok = AutoTokenizer.from_pretrained(str(folder))
    tok.padding_side = "left"
    sampler = SelfScoringGenerator(AutoModelForCausalLM.from_pretrained(str(folder)), tok)
    rows = _roll(tok, sampler, pool["iris_species"], _settings(max_turns=2, max_new_tokens=6), rows=2)
    assert all(len(r.turns) == 2 and r.turns[0].feedback_ids for r in rows)

    def rollout_func(logprobs):
        def func(prompts, trainer):
            return {"prompt_ids": [r.prompt_ids for r in rows], "completion_ids": [r.completion_ids for r in rows],
                    "logprobs": logprobs, "env_mask": [r.env_mask for r in rows]}
        return func

    ratio, mask = _trl_ratio(folder, tmp_path / "aligned", rollout_func(sampling_logprobs(rows)))
    assert mask.sum() == sum(sum(r.env_mask) for r in rows)
    np.testing.assert_allclose(ratio[mask].numpy(), 1.0, atol=2e-3)  # batch padding: float rounding only
    shifted = [[0.0, *lp[:-1]] for lp in sampling_logprobs(rows)]
    ratio, mask = _trl_ratio(folder, tmp_path / "shifted", rollout_func(shifted))
    assert np.abs(ratio[mask].numpy() - 1.0).max() > 0.1
    with pytest.raises(TypeError):
        _trl_ratio(folder, tmp_path / "none", rollout_func(None))


class DrawingLLM(FakeLLM):
    """Samples its tokens from torch's default generator, as vLLM's sampler does without per-request seeds."""

    def generate(self, prompts, sampling_params, use_tqdm=False):
        import torch

        n = sampling_params.kwargs["max_tokens"]
        return [type("Out", (), {"prompt_token_ids": p["prompt_token_ids"],
                                 "outputs": [_Completion(torch.randint(0, 1000, (n,)).tolist(), self.top)]})()
                for p in prompts]


def test_a_colocated_engine_draws_from_the_calls_seed_and_leaves_the_training_rng_alone(monkeypatch):
    import torch

    from wmrl.trainer.llm.generate import VLLMGenerator

    _, trainer = _trl_engine(monkeypatch, DrawingLLM())
    gen = VLLMGenerator(trainer)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    first, _ = gen.generate([[1], [1]], 6, seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the training's generator is untouched
    assert first[0] != first[1]  # two members of a group draw apart within one call
    assert gen.generate([[1], [1]], 6, seed=7)[0] == first  # the same seed draws the same
    assert gen.generate([[1], [1]], 6, seed=8)[0] != first  # another run's seed draws otherwise
