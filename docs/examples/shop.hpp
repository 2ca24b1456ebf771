#pragma once
// A custom store with two tables, customers and orders, and its codec:
// one small codec per table, composed with strata::multi_table_codec. The
// store of docs/tutorial-custom-store.md, and of the multi-table tests.
//
// An order debits its customer's balance, so placing or cancelling one
// changes a row in each table: one update, two tables, one record per
// changed row.

#include <strata/codec/multi_table_codec.hpp>
#include <strata/core/bytes.hpp>
#include <strata/serde/all.hpp>

#include <boost/hana/define_struct.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shop {

// [rows]
// One row type per table; BOOST_HANA_DEFINE_STRUCT gives each a serde.
struct customer {
    BOOST_HANA_DEFINE_STRUCT(customer,
        (std::int64_t, id),
        (std::string, name),
        (std::int64_t, balance_cents));
    friend bool operator==(const customer&, const customer&) = default;
};

struct order {
    BOOST_HANA_DEFINE_STRUCT(order,
        (std::int64_t, id),
        (std::int64_t, customer_id),
        (std::int64_t, amount_cents));
    friend bool operator==(const order&, const order&) = default;
};
// [rows]

// [updates]
// The updates the store accepts. Each returns whether it was accepted: an
// order its customer cannot pay for changes nothing.
struct add_customer { customer row; };
struct place_order { order row; };
struct cancel_order { std::int64_t order_id; };
// [updates]

// [store]
class shop_store {
public:
    explicit shop_store(std::string name) : name_(std::move(name)) {}
    std::string_view name() const noexcept { return name_; }  // all a state store needs

    bool apply(const add_customer& u) { return customers_.try_emplace(u.row.id, u.row).second; }
    bool apply(const place_order& u) {
        if (!can_place(u.row)) return false;
        customers_.at(u.row.customer_id).balance_cents -= u.row.amount_cents;
        orders_.emplace(u.row.id, u.row);
        return true;
    }
    bool apply(const cancel_order& u) {
        const auto it = orders_.find(u.order_id);
        if (it == orders_.end()) return false;
        customers_.at(it->second.customer_id).balance_cents += it->second.amount_cents;  // refund
        orders_.erase(it);
        return true;
    }

    // Whether place_order would be accepted: the codec asks before it is applied.
    bool can_place(const order& o) const {
        const auto c = customers_.find(o.customer_id);
        return !orders_.contains(o.id) && c != customers_.end() && c->second.balance_cents >= o.amount_cents;
    }

    const std::map<std::int64_t, customer>& customers() const noexcept { return customers_; }
    const std::map<std::int64_t, order>& orders() const noexcept { return orders_; }

    // Row-level writes, for restore.
    void put(const customer& c) { customers_.insert_or_assign(c.id, c); }
    void put(const order& o) { orders_.insert_or_assign(o.id, o); }
    void erase_customer(std::int64_t id) { customers_.erase(id); }
    void erase_order(std::int64_t id) { orders_.erase(id); }

private:
    std::string name_;
    std::map<std::int64_t, customer> customers_;
    std::map<std::int64_t, order> orders_;
};
// [store]

// [table-codecs]
// The codec of one table: its key is the table's primary key.
struct customer_codec {
    using key_type = std::int64_t;

    // The rows of this table an update will change, asked before it is
    // applied. An update the store will reject changes nothing: no rows.
    std::vector<std::int64_t> touched(const shop_store&, const add_customer& u) const { return {u.row.id}; }
    std::vector<std::int64_t> touched(const shop_store& s, const place_order& u) const {
        if (!s.can_place(u.row)) return {};
        return {u.row.customer_id};
    }
    std::vector<std::int64_t> touched(const shop_store& s, const cancel_order& u) const {
        const auto it = s.orders().find(u.order_id);
        if (it == s.orders().end()) return {};
        return {it->second.customer_id};
    }

    void write_key(std::int64_t id, strata::byte_buffer& out) const { strata::encode(id, out); }
    bool write_value(const shop_store& s, std::int64_t id, strata::byte_buffer& out) const {
        const auto it = s.customers().find(id);
        if (it == s.customers().end()) return false;  // gone: a tombstone
        strata::encode(it->second, out);
        return true;
    }
    void restore(shop_store& s, const strata::record_view& r) const {
        if (r.is_tombstone()) s.erase_customer(strata::decode<std::int64_t>(r.key));
        else s.put(strata::decode<customer>(*r.value));
    }
};

struct order_codec {
    using key_type = std::int64_t;

    // add_customer changes no order: this codec has no touched() for it.
    std::vector<std::int64_t> touched(const shop_store& s, const place_order& u) const {
        if (!s.can_place(u.row)) return {};
        return {u.row.id};
    }
    std::vector<std::int64_t> touched(const shop_store& s, const cancel_order& u) const {
        if (!s.orders().contains(u.order_id)) return {};
        return {u.order_id};
    }

    void write_key(std::int64_t id, strata::byte_buffer& out) const { strata::encode(id, out); }
    bool write_value(const shop_store& s, std::int64_t id, strata::byte_buffer& out) const {
        const auto it = s.orders().find(id);
        if (it == s.orders().end()) return false;
        strata::encode(it->second, out);
        return true;
    }
    void restore(shop_store& s, const strata::record_view& r) const {
        if (r.is_tombstone()) s.erase_order(strata::decode<std::int64_t>(r.key));
        else s.put(strata::decode<order>(*r.value));
    }
};
// [table-codecs]

// [shop-codec]
// The store's codec: table 0 is customers, table 1 orders. Each record key
// starts with that table byte, so never reorder the list; add tables at the end.
using shop_codec = strata::multi_table_codec<customer_codec, order_codec>;
// [shop-codec]

}  // namespace shop
