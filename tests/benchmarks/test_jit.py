"""The JIT warm-up benchmark drives the array store and the component solve."""




def test_jit_warmup_drives_the_array_store_and_the_component_solve():
    # the JIT compile time is measured on a run that calls every kernel: the per-flow
    # component solve and the array store (entered, with its solves)
    from benchmarks.jit import compile_all

    modes = compile_all()["modes"]
    assert modes["enter"] == 1 and modes["arrays"] > 0
