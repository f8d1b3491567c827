"""Defaults have one source."""




def test_defaults_have_one_source():
    from simcollective.cli import build_parser, config_from_args
    from simcollective.simulate import RunConfig, run_defaults
    from simcollective.sweeps import DEFAULTS

    d = run_defaults()
    for key, value in DEFAULTS.items():
        if key in d and key not in ("topology_opts", "algorithm", "elements", "collective", "timing", "study"):
            assert value == d[key], key
    # a sweep point without a collective is an allreduce, without timing/study the run's defaults
    # (None keeps the keys of points written before these keys existed)
    assert DEFAULTS["collective"] is None and d["collective"] == "allreduce"
    assert DEFAULTS["timing"] is None and d["timing"] == "simultaneous"
    assert DEFAULTS["study"] is None and d["study"] is False
    args = build_parser().parse_args(["run", "--algorithm", "ring", "--elements", "1M"])
    assert config_from_args(args) == RunConfig(algorithm="ring", elements=2**20)
