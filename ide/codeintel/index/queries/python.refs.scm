; References: calls, decorators, base classes and names in type annotations.
(call function: (identifier) @reference)
(call function: (attribute attribute: (identifier) @reference))
(decorator (identifier) @reference)
(class_definition superclasses: (argument_list (identifier) @reference))
(type (identifier) @reference)
