// application_options::validate(): a setting without which nothing can run,
// or one that contradicts another, is refused with a message naming it,
// before any client is made.

#include <strata/runtime/application_options.hpp>

#include <catch2/catch.hpp>

#include <chrono>

using strata::runtime::application_options;
using namespace std::chrono_literals;

namespace {
application_options runnable() {
    application_options o;
    o.application_id = "app";
    o.bootstrap_servers = "127.0.0.1:9092";
    o.input_topics = {"in"};
    return o;
}
}  // namespace

TEST_CASE("application options: validate names the setting it refuses", "[runtime][options]") {
    REQUIRE_NOTHROW(runnable().validate());

    application_options o = runnable();
    o.application_id.clear();
    CHECK_THROWS_WITH(o.validate(), Catch::Contains("application_id is empty"));

    o = runnable();
    o.standby_replicas = -1;
    CHECK_THROWS_WITH(o.validate(), Catch::Contains("standby_replicas is negative"));

    o = runnable();
    o.processing_threads = 0;
    CHECK_THROWS_WITH(o.validate(), Catch::Contains("processing_threads is 0"));

    o = runnable();
    o.standby_fetch_interval = -1ms;
    CHECK_THROWS_WITH(o.validate(), Catch::Contains("standby_fetch_interval is negative"));

    o = runnable();
    o.liveness_timeout = 7000ms;
    o.session_timeout = 6000ms;
    CHECK_THROWS_WITH(o.validate(), Catch::Contains("liveness_timeout (7000 ms) is over session_timeout"));
}
