"""One source for every choice and default: the variant tuples are the configuration's Literals, and
the world models' defaults are WorldModelConfig's, so a new choice is added in one place."""

import typing

import pytest

from wmrl.config import MethodConfig, WorldModelConfig
from wmrl.denoise import FUSION_VARIANTS
from wmrl.world_model.exploit import EXPLOITS
from wmrl.world_model.oracle import DISTORTIONS, OracleWorldModel
from wmrl.world_model.static import PROFILES, ProgramAnalysisWorldModel


def _choices(cls, field):
    return typing.get_args(typing.get_type_hints(cls)[field])


@pytest.mark.parametrize(("tuple_", "cls", "field"), [
    (PROFILES, WorldModelConfig, "profile"),
    (DISTORTIONS, WorldModelConfig, "oracle_distortion"),
    (EXPLOITS, WorldModelConfig, "exploit"),
    (FUSION_VARIANTS, MethodConfig, "fusion"),
])
def test_each_variant_tuple_is_its_configuration_literal(tuple_, cls, field):
    assert tuple_ == _choices(cls, field)


def test_the_world_models_defaults_are_the_configurations():
    wm = WorldModelConfig()
    static = ProgramAnalysisWorldModel()
    assert (static.temperature, static.profile) == (wm.temperature, wm.profile)
    oracle = OracleWorldModel(sandbox=None, noise=0.0)
    assert oracle.distortion == wm.oracle_distortion
