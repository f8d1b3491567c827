"""The filling benchmark's problems have the shape they claim."""




def test_filling_benchmark_problems_have_the_claimed_shape():
    # independent racks: the filling needs a pass per distinct level, so passes grow with
    # the racks; the all-to-all problem needs many passes
    from benchmarks.filling import all_to_all, racks, time_fill

    passes = [time_fill(racks(g), repeat=1, number=1)[1] for g in (1, 8)]
    assert passes[1] >= 6 * passes[0]
    assert time_fill(all_to_all(), repeat=1, number=1)[1] > 10
