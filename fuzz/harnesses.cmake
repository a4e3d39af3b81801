# The harnesses, one per reader (fuzz/fuzz_<name>.cpp, seeds in fuzz/corpus/<name>/): read by fuzz/CMakeLists.txt
# to build them and by cmake/fuzz.cmake to register their bounded runs as tests.
set(GRIDCAST_FUZZ_HARNESSES tit_rank tit_index tit_one_file native_jsonl native_binary raw_hook run_json model_json
    calibration_json gpu_datasheet platform_spec platform_xml gpu_trace study_file)
