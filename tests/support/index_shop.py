"""The sources of a two-module ``shop`` package (orders and a cart) read by the index tools and retrieval."""

from __future__ import annotations

MODELS = '''class Order:
    """An order of items."""

    def total(self) -> int:
        return sum_prices(self.items)


def sum_prices(items) -> int:
    return sum(i.price for i in items)
'''

SHOP = """from shop.models import Order, sum_prices


def checkout(order: Order) -> int:
    return order.total()


def refund(order):
    return -sum_prices(order.items)
"""
