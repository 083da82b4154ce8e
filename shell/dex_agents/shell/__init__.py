"""The imperative shell: Dex Steps and RPCs that gather inputs, call the pure reducers, call the
agent runner, and perform the effects the reducers describe. No domain logic lives here."""
