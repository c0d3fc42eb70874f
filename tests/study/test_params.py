import pytest

from spica.study.params import Objective, Param, check_objectives, check_params, coerce_point


def test_integer_values_from_vizier_floats_come_back_as_int():
    replicas = Param("replicas", "integer", low=1, high=8)
    assert replicas.coerce(3.0) == 3 and type(replicas.coerce(3.0)) is int


def test_discrete_value_maps_back_to_the_declared_choice():
    seqs = Param("max_num_seqs", "discrete", (256, 512, 1024))
    assert seqs.coerce(512.0) == 512 and type(seqs.coerce(512.0)) is int


def test_categorical_string_maps_back_to_a_non_string_choice():
    flag = Param("prefix_caching", "categorical", (True, False))
    assert flag.coerce("False") is False


def test_double_stays_float():
    assert Param("ratio", "double", low=0.0, high=1.0).coerce(1) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(name="x", kind="boolean"), "Param 'x': kind 'boolean' is not one of ['categorical', 'integer', 'double', 'discrete']"),
        (dict(name="x", kind="categorical"), "Param 'x': categorical needs at least one choice"),
        (dict(name="x", kind="discrete", choices=("a",)), "Param 'x': discrete choices must be numbers, got ['a']"),
        (dict(name="x", kind="integer", low=1.5, high=3), "Param 'x': integer bounds must be whole numbers, got 1.5..3"),
        (dict(name="x", kind="double", low=2.0, high=1.0), "Param 'x': low 2.0 must be <= high 1.0"),
        (dict(name="x", kind="categorical", choices=("a", "a")), "Param 'x': choices must be distinct, got ['a', 'a']"),
    ],
)
def test_invalid_params_name_the_field(kwargs, message):
    with pytest.raises(ValueError) as error:
        Param(**kwargs)
    assert str(error.value) == message


def test_value_outside_domain_is_rejected():
    with pytest.raises(ValueError, match=r"Param 'replicas': value 9 is outside integer in \[1, 8\]"):
        Param("replicas", "integer", low=1, high=8).coerce(9)


def test_objective_goal_is_checked_and_signs_minimised_values():
    assert Objective("e2e_latency", "minimize").signed(5.0) == -5.0
    with pytest.raises(ValueError, match="goal 'lower' is not one of"):
        Objective("x", "lower")  # type: ignore[arg-type]


def test_space_checks_reject_duplicates_and_empty():
    with pytest.raises(ValueError, match=r"params: duplicate names \['a'\]"):
        check_params([Param("a", "categorical", ("x",)), Param("a", "integer", low=0, high=1)])
    with pytest.raises(ValueError, match="objectives: a study needs at least one objective"):
        check_objectives([])


def test_candidate_point_must_have_exactly_the_study_params():
    params = [Param("tp", "discrete", (1, 2)), Param("replicas", "integer", low=1, high=4)]
    assert coerce_point(params, {"tp": 2.0, "replicas": 3.0}) == {"tp": 2, "replicas": 3}
    with pytest.raises(ValueError, match=r"missing params \['replicas'\], unknown params \['pp'\]"):
        coerce_point(params, {"tp": 1, "pp": 1})
