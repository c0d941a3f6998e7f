// The one source of rl_test_pch (tests/CMakeLists.txt), the target whose precompiled gtest.h
// every test target reuses: a PCH needs a target of its own to be built in.
