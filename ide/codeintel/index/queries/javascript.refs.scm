; References: calls, `new X`, base classes and JSX components.
(call_expression function: (identifier) @reference)
(call_expression function: (member_expression property: (property_identifier) @reference))
(new_expression constructor: (identifier) @reference)
(class_heritage (identifier) @reference)
(jsx_opening_element name: (identifier) @reference)
(jsx_self_closing_element name: (identifier) @reference)
