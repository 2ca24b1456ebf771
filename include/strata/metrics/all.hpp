#pragma once
/// @file
/// @brief Everything in strata's metrics: counters, gauges, histograms, scoped
/// timers, the registry and its Prometheus rendering.

#include <strata/metrics/counter.hpp>
#include <strata/metrics/gauge.hpp>
#include <strata/metrics/histogram.hpp>
#include <strata/metrics/prometheus.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/metrics/timer.hpp>
