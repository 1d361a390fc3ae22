"""openEvo skill.json skills: a skill declared as a function (input/output JSON Schemas and a
mode: code, llm or composite), loaded into the same SkillPackage as SKILL.md skills."""
