// Codecs and serdes for types you cannot edit.
//
// `pricing` stands for a library you depend on: its money type has private
// members and no default constructor, and its price_list store follows
// strata's store concept but declares no codec. Both are taught to strata
// from outside: a strata::serde<pricing::money> specialization, and
// strata::store_traits<pricing::price_list>::codec_type.
//
// Usage: custom_codec [--quick]   (--quick is accepted; the example is small anyway)

#include <strata/changelog/memory_log.hpp>
#include <strata/core/error.hpp>
#include <strata/core/store_traits.hpp>
#include <strata/decorators/all.hpp>
#include <strata/serde/all.hpp>
#include <strata/stores/ordered_map_store.hpp>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

// ---- the library you cannot edit
namespace pricing {

class money {
public:
    money(std::int64_t cents, std::string currency) : cents_(cents), currency_(std::move(currency)) {}
    std::int64_t cents() const noexcept { return cents_; }
    const std::string& currency() const noexcept { return currency_; }
    friend bool operator==(const money&, const money&) = default;

private:
    std::int64_t cents_;
    std::string currency_;
};

struct set_price {
    std::string sku;
    money price;
};
struct discount {  // every sku starting with prefix gets percent off
    std::string prefix;
    std::int64_t percent;
};
struct withdraw {
    std::string sku;
};

class price_list {
public:
    explicit price_list(std::string name) : name_(std::move(name)) {}
    std::string_view name() const noexcept { return name_; }

    void apply(const set_price& u) { prices_.insert_or_assign(u.sku, u.price); }
    void apply(const discount& u) {
        for (const auto& sku : skus_starting_with(u.prefix)) {
            money& m = prices_.at(sku);
            m = money(m.cents() - m.cents() * u.percent / 100, m.currency());
        }
    }
    void apply(const withdraw& u) { prices_.erase(u.sku); }

    const money* price(const std::string& sku) const {
        const auto it = prices_.find(sku);
        return it == prices_.end() ? nullptr : &it->second;
    }
    std::vector<std::string> skus_starting_with(std::string_view prefix) const {
        std::vector<std::string> skus;
        for (auto it = prices_.lower_bound(std::string(prefix)); it != prices_.end() && it->first.starts_with(prefix); ++it)
            skus.push_back(it->first);
        return skus;
    }
    friend bool operator==(const price_list& a, const price_list& b) { return a.prices_ == b.prices_; }

private:
    std::string name_;
    std::map<std::string, money> prices_;
};

}  // namespace pricing

// ---- what you add, in your own code

// [serde]
/// money nested anywhere (a record value, a struct field, a vector element):
/// the cents as 8 bytes big-endian, then the currency as a nested string.
template <>
struct strata::serde<pricing::money> {
    static constexpr std::size_t min_size = 8 + 4;  // lets vector<money> reject impossible counts early

    static void write(const pricing::money& m, strata::byte_buffer& out) {
        strata::serde<std::int64_t>::write(m.cents(), out);
        strata::serde<std::string>::write(m.currency(), out);
    }
    static pricing::money read(strata::byte_reader& in) {
        const auto cents = strata::serde<std::int64_t>::read(in);
        auto currency = strata::serde<std::string>::read(in);
        if (currency.size() != 3) in.fail("a currency code has three letters");
        return pricing::money(cents, std::move(currency));
    }
};
// [serde]

// [codec]
/// One record per sku: its current price, or a tombstone once withdrawn.
/// It changes the store only through the store's own updates.
struct price_codec {
    using key_type = std::string;

    std::vector<std::string> touched(const pricing::price_list&, const pricing::set_price& u) const { return {u.sku}; }
    std::vector<std::string> touched(const pricing::price_list&, const pricing::withdraw& u) const { return {u.sku}; }
    std::vector<std::string> touched(const pricing::price_list& s, const pricing::discount& u) const {
        return s.skus_starting_with(u.prefix);
    }

    void write_key(const std::string& sku, strata::byte_buffer& out) const { strata::encode(sku, out); }
    bool write_value(const pricing::price_list& s, const std::string& sku, strata::byte_buffer& out) const {
        const pricing::money* m = s.price(sku);
        if (!m) return false;
        strata::encode(*m, out);
        return true;
    }
    void restore(pricing::price_list& s, const strata::record_view& r) const {
        auto sku = strata::decode<std::string>(r.key);
        if (r.is_tombstone()) s.apply(pricing::withdraw{std::move(sku)});
        else s.apply(pricing::set_price{std::move(sku), strata::decode<pricing::money>(*r.value)});
    }
};

template <>
struct strata::store_traits<pricing::price_list> {
    using codec_type = price_codec;  // `logged(log)` now finds it
};
// [codec]

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

std::string hex(const strata::byte_buffer& b) {
    std::string s;
    for (const std::byte x : b) {
        char two[4];
        std::snprintf(two, sizeof two, "%02x ", std::to_integer<unsigned>(x));
        s += two;
    }
    if (!s.empty()) s.pop_back();
    return s;
}

}  // namespace

int main(int argc, char** argv) try {
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) != "--quick") throw std::invalid_argument("usage: custom_codec [--quick]");

    // [bytes]
    const strata::byte_buffer bytes = strata::encode(pricing::money(1999, "EUR"));
    // 00 00 00 00 00 00 07 cf  00 00 00 03  45 55 52
    // cents, big-endian        length       "EUR"
    // [bytes]
    std::cout << "money(1999, EUR): " << hex(bytes) << "\n";
    check(hex(bytes) == "00 00 00 00 00 00 07 cf 00 00 00 03 45 55 52", "money encodes as documented");
    check(strata::decode<pricing::money>(bytes) == pricing::money(1999, "EUR"), "money round-trips");

    // [bad-bytes]
    strata::byte_buffer longer = bytes;
    longer.push_back(std::byte{0});
    try {
        (void)strata::decode<pricing::money>(longer);
    } catch (const strata::serde_error& e) {
        std::cout << e.what() << "\n";  // "... at byte offset 15: ..." (the extra byte)
    }
    // [bad-bytes]
    bool trailing_rejected = false, bad_currency_rejected = false;
    try {
        (void)strata::decode<pricing::money>(longer);
    } catch (const strata::serde_error& e) {
        trailing_rejected = e.offset() == 15;
    }
    try {
        (void)strata::decode<pricing::money>(strata::encode(pricing::money(1, "EURO")));
    } catch (const strata::serde_error& e) {
        std::cout << e.what() << "\n";
        bad_currency_rejected = true;
    }
    check(trailing_rejected, "trailing bytes are an error at their offset");
    check(bad_currency_rejected, "in.fail reports a bad currency");

    // [kv-store]
    // A kv store of money needs nothing more than the serde: its codec is kv_codec.
    strata::memory_log kv_log;
    auto wallet = strata::ordered_map_store<std::string, pricing::money>("wallet") | strata::logged(kv_log);
    wallet.put("alice", pricing::money(500, "EUR"));
    // [kv-store]
    check(kv_log.size() == 1 && strata::decode<pricing::money>(*kv_log.records()[0].value) == pricing::money(500, "EUR"),
          "the kv store logs money through its serde");

    // [traits-store]
    strata::memory_log log;
    auto prices = pricing::price_list("prices") | strata::logged(log) | strata::cached();
    prices.apply(pricing::set_price{"book-1", pricing::money(2000, "EUR")});
    prices.apply(pricing::set_price{"book-2", pricing::money(1000, "EUR")});
    prices.apply(pricing::set_price{"pen-1", pricing::money(300, "EUR")});
    prices.apply(pricing::discount{"book-", 10});  // touches book-1 and book-2
    prices.apply(pricing::withdraw{"pen-1"});
    prices.flush();

    auto restored = pricing::price_list("prices") | strata::logged(log) | strata::cached();
    restored.restore();
    // [traits-store]
    check(strata::innermost(restored) == strata::innermost(prices), "restore through store_traits' codec");
    check(*strata::innermost(restored).price("book-1") == pricing::money(1800, "EUR"), "the discount was logged");
    check(log.append_count() == 3, "one record per sku per flush, the withdrawn pen a tombstone");
    check(log.records()[2].is_tombstone(), "the withdrawn sku is a tombstone");

    std::cout << (failures == 0 ? "custom_codec: all checks passed\n" : "custom_codec: CHECKS FAILED\n");
    return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "custom_codec: " << e.what() << "\n";
    return 2;
}
