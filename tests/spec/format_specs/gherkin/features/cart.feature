# The cart keeps what a customer means to buy.
@shop
Feature: Shopping cart
  A customer collects items before paying.

  Background:
    Given an empty cart

  @smoke
  Scenario: Add one item
    When the customer adds "apple"
    Then the cart holds 1 item

  Scenario Outline: Add several items
    When the customer adds <count> items
    Then the cart holds <count> items

    @bulk
    Examples: small orders
      | count |
      | 2     |
      | 3     |

  Rule: Removing never goes below zero

    Scenario: Remove an item that is not there
      When the customer removes "pear"
      Then the cart holds 0 items
      And the page says:
        """
        pear was not in your cart
        """
